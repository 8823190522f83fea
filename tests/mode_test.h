/* A recording mode the suites share (test_modes.c, test_wrappers.c): its
 * call handler appends each op's name to a log, counts the calls and
 * redispatches, so a test sees which ops a call reached and in what order;
 * its data-read hook counts reads (and fails them when asked). */
#ifndef TT_MODE_TEST_H
#define TT_MODE_TEST_H

#include <stdio.h>
#include <string.h>

#include "tt_test.h"

typedef struct {
    tt_mode mode;
    char log[2048];
    int ncalls, nreads, fail_reads;
    const char *tag;
    char last_what[32];
    tt_mode *current_inside;
} rec_mode;

static inline tt_status rec_call(tt_mode *m, const tt_op *op, const tt_value *args, int nargs,
                                 tt_value *outs, int nouts)
{
    rec_mode *r = m->ud;
    r->ncalls++;
    r->current_inside = tt_mode_current();
    size_t len = strlen(r->log);
    snprintf(r->log + len, sizeof r->log - len, "%s%s%s", len ? " " : "", r->tag ? r->tag : "",
             tt_op_name(op));
    return tt_op_redispatch(op, args, nargs, outs, nouts);
}

static inline tt_status rec_read(tt_mode *m, const tt_tensor *t, const char *what,
                                 tt_srcloc loc)
{
    rec_mode *r = m->ud;
    (void)t, (void)loc;
    r->nreads++;
    snprintf(r->last_what, sizeof r->last_what, "%s", what);
    if (r->fail_reads)
        return tt_error(r->fail_reads == 1 ? TT_EGRAPHBREAK : TT_EINVAL,
                        "%s at %s:%d is a graph break", what, loc.file, loc.line);
    return TT_OK;
}

/* A recording mode with an empty log; `tag` (may be NULL) prefixes each
 * name, to tell stacked modes apart. */
static inline void rec_init(rec_mode *r, const char *tag)
{
    memset(r, 0, sizeof *r);
    r->mode.call = rec_call;
    r->mode.data_read = rec_read;
    r->mode.ud = r;
    r->tag = tag;
}

#endif
