/* Internal to tracer/: the profiler's recorder (profile.c), which compiled
 * plans (plan.c, compile.c) feed with their steps, and its reports
 * (profile_report.c). */
#ifndef TT_PROFILE_IMPL_H
#define TT_PROFILE_IMPL_H

#include "tt_profile.h"
#include "tt_dispatch.h"

#include <stdbool.h>

/* The profile recording on this thread (NULL: none): the one test a plan
 * step pays while no profile runs. */
extern _Thread_local tt_profile *tt__profiling;
/* Set while a compiled plan runs on this thread (plan.c): the op calls
 * its steps make inside (an output's allocation) are the step's, not the
 * program's, for the profiler's mode and the hash log's. */
extern _Thread_local int tt__plan_running;

/* Opens an event on this thread's profile: its index, or -1 when none
 * runs or it could not be recorded (then close does nothing). name, the
 * call site's strings and node are copied. */
int tt__profile_open(tt_profile_kind kind, const char *name, tt_srcloc loc, const char *node);
/* Closes event ev, which must be the innermost open one. */
void tt__profile_close(int ev, int64_t bytes, int64_t flops);
/* A compiled call's memory plan (see tt_profile_event). */
void tt__profile_set_plan(int ev, int64_t block, int64_t buffers, int64_t unshared);
/* Bytes of the tensors a call read and wrote; -1 when one is fake (a
 * traced call touches no bytes). */
int64_t tt__profile_bytes(const tt_value *args, int nargs, const tt_value *outs, int nouts);
/* FLOPs of a call of op (matrix products, convolutions, attention), or -1
 * when not known. */
int64_t tt__profile_flops(const tt_op *op, const tt_value *args, int nargs, const tt_value *outs,
                          int nouts);

/* The events' storage, for the reports. */
struct tt_profile {
    tt_mode mode;
    int64_t t0;      /* CLOCK_MONOTONIC ns at begin */
    int64_t thread;  /* the profiled thread's id */
    tt_profile_event *ev;
    int n, cap;
    int depth;       /* events open now */
    int open[64];    /* their indices (deeper ones are not recorded) */
    int64_t start_live;
    int64_t dropped; /* events not recorded (out of memory, too deep) */
    char **names;    /* interned strings: a hash set, open addressing */
    size_t nnames, cap_names;
};

#endif
