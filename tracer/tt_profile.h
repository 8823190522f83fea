/* The profiler: torch.profiler's counterpart for C model code.
 *
 * Between tt_profile_begin() and tt_profile_end() on a thread, every op
 * the thread calls eagerly (the ops a user's code calls: what an op's
 * kernel calls inside it is part of its time) and every step of every
 * compiled plan it runs (an op, a fused elementwise chain, an
 * accumulating GEMM) becomes an event: its wall time, the bytes of the
 * tensors it read and wrote, its FLOPs where they are known (matrix
 * products, convolutions, attention), the tensor storage alive after it,
 * and the user's file:line (for a plan step, the line of the graph node).
 * A compiled call's first trace and compile is an event too.
 *
 *     tt_profile_begin();
 *     model_step(...);
 *     tt_profile *p = tt_profile_end();
 *     char *table = tt_profile_table(p, 20);   // key_averages().table()
 *     tt_profile_write_chrome(p, "step.json"); // open in ui.perfetto.dev
 *     free(table);
 *     tt_profile_free(p);
 *
 * With TT_PROFILE=file.json in the environment, the thread that loads the
 * library is profiled from then until the process exits, when the trace is
 * written to file.json and the table to stderr.
 *
 * The profiler is a dispatch mode (tt_dispatch.h) on its thread: while it
 * runs, typed wrappers take the boxed path so that each call is seen. Off,
 * it costs nothing: no check is added to the eager fast path, and a plan
 * step tests one thread-local pointer. */
#ifndef TT_PROFILE_H
#define TT_PROFILE_H

#include "tt_runtime.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the public API: see tt_runtime.h */

typedef struct tt_profile tt_profile;

typedef enum {
    TT_PROFILE_OP,      /* an eager op call */
    TT_PROFILE_STEP,    /* a compiled plan's step running one op */
    TT_PROFILE_FUSED,   /* a compiled plan's fused elementwise chain */
    TT_PROFILE_GEMM,    /* a compiled plan's accumulating GEMM (w += a @ b) */
    TT_PROFILE_CALL,    /* a compiled call (its steps nest inside) */
    TT_PROFILE_COMPILE, /* tracing and planning a compiled function */
} tt_profile_kind;

typedef struct {
    const char *name;  /* "tt::mm", "fused add, mul, relu", "compiled forward" */
    tt_profile_kind kind;
    int64_t thread;    /* the OS thread id */
    int depth;         /* nesting on its thread: 0 outermost */
    int64_t start_ns;  /* since tt_profile_begin */
    int64_t dur_ns;
    int64_t bytes;     /* of the tensors read and written; -1: not known */
    int64_t flops;     /* -1: not known */
    int64_t live_bytes; /* tensor storage alive in the process after it */
    tt_srcloc loc;     /* the user's call site ({0} when none) */
    const char *node;  /* a plan step's graph node ("mm_3"); NULL otherwise */
    /* A compiled call's memory plan: its block, and the buffers it holds
     * with what they would take unshared (0 while the plan records). */
    int64_t planned_bytes, planned_buffers, unshared_bytes;
} tt_profile_event;

/* Starts profiling the calling thread. TT_EINVAL when it is already being
 * profiled, or called from inside an op. */
tt_status tt_profile_begin(void);
/* Stops, and returns what was recorded (NULL with TT_EINVAL when the
 * thread was not being profiled). */
tt_profile *tt_profile_end(void);
tt_profile *tt_profile_free(tt_profile *p); /* NULL-safe; returns NULL */

int tt_profile_num_events(const tt_profile *p);
/* Event i in the order they began; NULL outside 0..n-1. Valid until the
 * profile is freed. */
const tt_profile_event *tt_profile_event_at(const tt_profile *p, int i);
/* The most tensor storage alive after any event, and the event (-1: at
 * the start). Measured between calls: a kernel's own temporaries, freed
 * before it returns, are not in it. */
int64_t tt_profile_peak_bytes(const tt_profile *p, int *event);

/* The summary table, one row per name, sorted by total time, as
 * torch.profiler's key_averages().table(): calls, total and self time
 * (without what nests inside), bytes, FLOPs and the rate of each, then the
 * peak of memory and each compiled plan's memory. At most max_rows rows
 * (<= 0: all). A string to free(); NULL with TT_ENOMEM. */
char *tt_profile_table(const tt_profile *p, int max_rows);
/* A Chrome trace (JSON) that Perfetto and chrome://tracing open: one
 * complete event per event, with its call site, bytes and FLOPs as args,
 * and a counter track of the live bytes. */
tt_status tt_profile_write_chrome(const tt_profile *p, const char *path);
/* A timeline picture: one band per thread, nested events stacked under
 * the ones that hold them, each with its name and a tooltip. */
tt_status tt_profile_write_svg(const tt_profile *p, const char *path);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
