/* Internal: the library's side of the thread's error. Not installed.
 *
 * A NULL tensor argument reports the error the thread holds (the failed
 * call that produced the NULL: tt_softmax(tt_linear(x, w_bad, b), 1)):
 * the first cause wins. The thread holds an error from the moment it is
 * set until tt_clear_error or the next error; reading it (tt_errcode,
 * tt_errmsg) does not count, so the rule depends on the calls alone. Code
 * that handles an error and goes on acknowledges it with tt_clear_error. */
#ifndef TT_ERROR_IMPL_H
#define TT_ERROR_IMPL_H

#include "tt_runtime.h"

#include <stdint.h>

/* Bumped by every error set on this thread (a NULL argument's context
 * included): the dispatcher tells a kernel that failed without a message
 * from one that set its own, without clearing the caller's error first. */
extern _Thread_local uint64_t tt__err_gen;

/* Appends text to the held error's message (truncated to fit); the error
 * stays the same one (tt__err_gen does not move). */
void tt__error_append(const char *text);

/* A NULL tensor argument. While the thread holds an error, that error
 * stays (its code and message, this call added as context: "<cause>
 * (then <this call>)"); otherwise TT_EINVAL with the message. */
tt_status tt__null_arg_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* How many TT_ENOMEM errors this thread has raised so far. A caller that
 * runs a long computation and turns its failures into findings of its own
 * (opcheck) compares it before and after: a finding made while memory ran
 * out is no finding, and the call fails with TT_ENOMEM instead. */
int64_t tt__oom_raised(void);

#endif
