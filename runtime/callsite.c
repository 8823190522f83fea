/* The chain of the user's call sites on this thread (tt_dispatch.h's
 * "Call sites"): the frames the call-site macros push, read by the
 * dispatcher (a graph node's line), by the allocator and every other
 * error path (" in tt_sin, called from model.c:12 in mlp"). A base file:
 * it calls nothing above the errors, so the allocator uses it without
 * depending on the dispatcher. */
#include "tensor_impl.h"

#include <stdio.h>
#include <string.h>

_Thread_local const tt_callframe *tt_callframe_top;

tt_srcloc tt_callsite(void)
{
    const tt_callframe *f = tt_callframe_top;
    return f ? f->loc : (tt_srcloc){0};
}

const char *tt__callsite_text(char *buf, size_t n)
{
    const tt_callframe *f = tt_callframe_top;
    if (!f || !f->loc.file) {
        snprintf(buf, n, "%s", "");
        return buf;
    }
    snprintf(buf, n, " in %s, called from %s:%d in %s", f->fn ? f->fn : "a call",
             f->loc.file, f->loc.line, f->loc.func ? f->loc.func : "?");
    return buf;
}

/* The call-site chain can be long (a kernel's calls inside a model's
 * inside helpers): the innermost few say where. */
#define MAX_CALLSITES_SHOWN 6

void tt_callframe_fail(void)
{
    const tt_callframe *f = tt_callframe_top;
    if (!f || !f->loc.file || tt_errcode() == TT_OK)
        return;
    /* Already there: the innermost frame's own report (a graph break, an
     * allocation failure name the line), or this error passing through an
     * enclosing call on the same line (tt_relu(tt_add(a, b))). */
    char here[300];
    snprintf(here, sizeof here, "%s:%d", f->loc.file, f->loc.line);
    const char *msg = tt_errmsg();
    if (strstr(msg, here))
        return;
    char text[1024];
    size_t len = 0;
    const tt_callframe *last = NULL;
    for (int shown = 0; f && len < sizeof text && shown < MAX_CALLSITES_SHOWN; f = f->prev) {
        if (!f->loc.file)
            continue;
        /* Nested calls in one expression share a line: say it once. */
        if (last && last->loc.line == f->loc.line && strcmp(last->loc.file, f->loc.file) == 0)
            continue;
        len += (size_t)snprintf(text + len, sizeof text - len, ", called from %s:%d in %s",
                                f->loc.file, f->loc.line, f->loc.func ? f->loc.func : "?");
        last = f;
        shown++;
    }
    tt__error_append(text);
}

