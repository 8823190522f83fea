/* Internal: how the library reads the thread's error. Not installed.
 *
 * A NULL tensor argument reports the error the thread holds (the failed
 * call that produced the NULL: tt_softmax(tt_linear(x, w_bad, b), 1)),
 * but only while the user has not looked at it: once tt_errcode() or
 * tt_errmsg() has shown it to them, a later NULL is a new mistake of
 * theirs, not a consequence. So library code reads the error through
 * these, which do not count as looking; the macros make every internal
 * use of the public names do so. */
#ifndef TT_ERROR_IMPL_H
#define TT_ERROR_IMPL_H

#include "tt_runtime.h"

tt_status tt__errcode(void);
const char *tt__errmsg(void);
#define tt_errcode() tt__errcode()
#define tt_errmsg() tt__errmsg()

/* A NULL tensor argument. While the thread holds an error the user has not
 * seen, that error stays (its code and message, this call added as
 * context: "<cause> (then <this call>)"); otherwise TT_EINVAL with the
 * message. */
tt_status tt__null_arg_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* How many TT_ENOMEM errors this thread has raised so far. A caller that
 * runs a long computation and turns its failures into findings of its own
 * (opcheck) compares it before and after: a finding made while memory ran
 * out is no finding, and the call fails with TT_ENOMEM instead. */
int64_t tt__oom_raised(void);

#endif
