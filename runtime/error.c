/* Per-thread error state: a status and a sentence. */
#include "tensor_impl.h"

#include <stdio.h>
#include <string.h>

#define TT_ERRMSG_MAX 2048

static _Thread_local tt_status err_code;
static _Thread_local char err_msg[TT_ERRMSG_MAX];
/* Counts the errors set on this thread (error_impl.h). */
_Thread_local uint64_t tt__err_gen;
/* How many TT_ENOMEM errors this thread has raised: error_impl.h. */
static _Thread_local int64_t oom_raised;

int64_t tt__oom_raised(void) { return oom_raised; }

static const char *const status_names[] = {
#define TT_X_NAME(code, text) #code,
    TT_STATUS_LIST(TT_X_NAME)
#undef TT_X_NAME
};

/* The getters are pure: reading an error changes nothing, so whether a
 * later NULL argument reports it as its cause does not depend on whether
 * anyone printed it. The thread holds an error until the next one or
 * tt_clear_error (tt_runtime.h). */
tt_status tt_errcode(void) { return err_code; }
const char *tt_errmsg(void) { return err_code == TT_OK ? "" : err_msg; }

void tt_clear_error(void)
{
    err_code = TT_OK;
    err_msg[0] = '\0';
}

const char *tt_status_name(tt_status s)
{
    if ((unsigned)s >= TT_STATUS_COUNT)
        return "TT_E?";
    return status_names[s];
}

tt_status tt__errorv(tt_status code, const char *fmt, va_list ap)
{
    /* Format into a scratch buffer first: a message may quote the previous
     * one (tt_errmsg()) as one of its arguments. */
    char buf[TT_ERRMSG_MAX];
    vsnprintf(buf, sizeof buf, fmt, ap);
    memcpy(err_msg, buf, sizeof buf);
    err_code = code;
    tt__err_gen++;
    oom_raised += code == TT_ENOMEM;
    return code;
}

tt_status tt_error(tt_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tt__errorv(code, fmt, ap);
    va_end(ap);
    return code;
}

void tt__error_append(const char *text)
{
    size_t len = strlen(err_msg);
    snprintf(err_msg + len, sizeof err_msg - len, "%s", text);
}

tt_status tt__null_arg_error(const char *fmt, ...)
{
    char ctx[TT_ERRMSG_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    if (err_code == TT_OK)
        return tt_error(TT_EINVAL, "%s", ctx);
    /* The NULL is most likely the result of the call that failed: its
     * error is the cause, this call is what it led to. The cause comes
     * first, so a long chain loses its outer context, never the cause. */
    size_t len = strlen(err_msg);
    snprintf(err_msg + len, sizeof err_msg - len, " (then %s)", ctx);
    tt__err_gen++;
    return err_code;
}
