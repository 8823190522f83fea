/* Internal to tracer/: the tracer state shared by tracing, explain and
 * compile. */
#ifndef TT_TRACE_IMPL_H
#define TT_TRACE_IMPL_H

#include "graph_impl.h"

#include <limits.h>
#include <stdio.h>

#define TT_TRACE_MAX_ARGS 32
/* Inputs and outputs are sized by the call (a training step passes every
 * parameter, its gradient and its optimizer moments). The one bound: a
 * compiled call binds up to TT_MAX_DIMS + 1 symbols per input (its sizes
 * and storage offset) in one array indexed by int. */
#define TT_TRACE_MAX_INPUTS (INT_MAX / (TT_MAX_DIMS + 1))

/* tt_status on a NULL tensor argument, with the library's wording. */
#define TT_CHECK_TENSOR_PUBLIC(fn, arg, t)                                     \
    ((t) ? TT_OK                                                               \
         : tt_error(TT_EINVAL, "%s: argument '%s' expects a tensor, got NULL", \
                    (fn), (arg)))

typedef struct tracer tracer;

/* Symbolic mode: the symbols made for each input dim, and the guards. */
typedef struct {
    tt_guard_op op;
    tt_size a, b;
    bool result;
} sym_guard;

typedef struct {
    int ndim;
    tt_size sizes[TT_MAX_DIMS];    /* symbols, or the concrete 0/1 */
    int64_t concrete[TT_MAX_DIMS]; /* the example sizes */
    /* The layout as traced: expressions of the sizes' symbols, or
     * constants (see symbolic_trace.c); guarded by compile. */
    tt_size strides[TT_MAX_DIMS];
    tt_size offset;
    int order[TT_MAX_DIMS];        /* dims innermost first */
} sym_input;

typedef struct sym_state {
    sym_input *inputs; /* grown as inputs come; compile may take it */
    int ninputs, cap_inputs;
    sym_guard *guards;
    int nguards, cap_guards;
    bool oom;
} sym_state;

struct tracer {
    tt_mode mode; /* first: the runtime hands handlers this pointer */
    tt_trace_opts opts;
    tt_trace_mode kind;
    bool fake;
    uint64_t key;
    tt_graph *g;
    /* The first break of a trace that does not split (tt_trace, compile's
     * trace): its report fails the trace once the function returns. */
    bool broke;
    tt_break_info brk;
    char brk_reason[512], brk_op[128], brk_file[256], brk_func[128];
    char brk_msg[2048];
    bool brk_let_through; /* a read returned TT_OK at a break (real data) */
    /* Memory standing in for fake tensors' data at breaks (trace.c). */
    struct stand_in *stand_ins;
    int nstand_ins, cap_stand_ins;
    /* Set by explain to split at breaks instead of failing: the hook
     * through which explain (above trace) plugs into trace, so trace
     * never calls explain (tests/check_layers.py). pin: the tensors the C
     * code reads at the break (the tensor read, or an eager op's tensor
     * arguments). With it set, a real trace runs an op it cannot trace
     * on fake tensors eagerly, after the hook closed the graph. */
    tt_status (*on_break)(tracer *tr, tt_break_kind kind, const tt_op *op,
                          const char *reason, tt_srcloc loc,
                          const tt_tensor *const *pin, int npin);
    struct alias_index *aliases; /* the graph's values by storage (trace.c) */
    /* While a custom op's fake kernel runs under the trace: the op, and
     * its first data read, a break reported once the kernel returns. */
    const tt_op *fk_op;
    bool fk_read;
    tt_srcloc fk_read_loc;
    char fk_reason[512];
    void *split; /* the splitting state of explain */
    /* Symbolic mode: the symbols made for the inputs. */
    sym_state *sym;
};

tracer *tt__tracer_current(void);
/* Input i's name in the graph: opts->input_names[i], or "in<i>". */
const char *tt__input_name(const tt_trace_opts *opts, int i, char *buf, size_t n);
double tt__now_ms(void); /* a monotonic clock */

/* log.c: TT_LOG topics (bits); topic 0 is a warning, always printed. */
enum {
    TT_LOG_GRAPH_BREAKS = 1u << 0,
    TT_LOG_GUARDS = 1u << 1,
    TT_LOG_RECOMPILES = 1u << 2,
    TT_LOG_GRAPH = 1u << 3,
    TT_LOG_PLAN = 1u << 4,
    TT_LOG_PERF = 1u << 5,
};
bool tt__log_on(unsigned topic);
/* One line (the newline is added) when the topic is on. */
void tt__log(unsigned topic, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* What a compiled plan checks of an input traced as t, in one line:
 * "check_tensor(f32, requires_grad=False, size=[2, 3], stride=[3, 1])". */
void tt__guard_text(const tt_tensor *t, char *buf, size_t n);
void tt__no_fake_reason(const tt_op *op, char *buf, size_t n);
bool tt__tracer_lookup(const tracer *tr, const tt_tensor *t, gref *out);
void tt__tracer_tag(tracer *tr, tt_tensor *t, int node, int out);
tt_status tt__tracer_break(tracer *tr, tt_break_kind kind, const char *reason,
                           const char *op, tt_srcloc loc);
tt_status tt__tracer_begin(tracer *tr, const tt_trace_opts *opts, const char *name);
/* TT_EINVAL naming fn when opts (may be NULL) has an unknown mode or a
 * negative output count. */
tt_status tt__check_trace_opts(const char *fn, const tt_trace_opts *opts);
tt_tensor *tt__tracer_input(tracer *tr, tt_tensor *x);
/* The traced function's input values and outputs, in one zeroed block
 * from the library's allocator: *outs follows *vals. The caller frees
 * *vals with tt__free. TT_ENOMEM naming fn. */
tt_status tt__tracer_io_alloc(const char *fn, int nin, int nout, tt_tensor ***vals,
                              tt_tensor ***outs);
tt_status tt__tracer_add_inputs(tracer *tr, int nin, tt_tensor **inputs, tt_tensor **vals);
tt_status tt__tracer_run(tracer *tr, tt_fn fn, int nin, tt_tensor **vals, tt_tensor **outs);
tt_status tt__tracer_set_outputs(tracer *tr, tt_tensor **outs, int nout);
void tt__tracer_end(tracer *tr);
/* tt_trace, leaving the tracer's symbolic state for the caller (compile
 * keeps its guards); the caller calls tt__tracer_end. */
tt_graph *tt__trace_keep(tracer *tr, tt_fn fn, int nin, tt_tensor **inputs,
                         const tt_trace_opts *opts);

/* values.c: a private copy of a call's arguments: tensors cloned (layout
 * kept when dense) or made fake, requires_grad kept. Used by trace's
 * fake-kernel probe and by opcheck. */
typedef struct {
    tt_value v[TT_TRACE_MAX_ARGS];
    int n;
    tt_tensor **lists[TT_TRACE_MAX_ARGS];
} tt__argset;
tt_status tt__argset_copy(tt__argset *a, const tt_value *args, int nargs, bool fake);
void tt__argset_free(tt__argset *a);

/* symbolic_trace.c */
tt_tensor *tt__symbolic_input(tracer *tr, tt_tensor *x);
void tt__symbolic_end(tracer *tr);
void tt__symbolic_start(tracer *tr); /* install the guard hook */
void tt__symbolic_stop(tracer *tr);

/* The calling line of the innermost tt_call on this thread. */
static inline tt_srcloc tt__callsite(void) { return tt_callsite(); }

/* Watches each op node's values as a run makes them, for the numerics
 * bisector and the hash log (bisect.c): a real-mode trace calls it as it
 * records each op node, a compiled plan after each step (for a fused
 * chain or an accumulating GEMM, with its last node). The values are
 * borrowed and current only during the call: later steps may write over
 * them. One per thread; NULL: none (a plan step tests the pointer). */
typedef struct tt__node_watch tt__node_watch;
struct tt__node_watch {
    /* in_plan: a compiled plan's step (else a real-mode trace's node) */
    void (*seen)(tt__node_watch *w, const gnode *n, tt_tensor *const *vals, int nvals,
                 bool in_plan);
};
extern _Thread_local tt__node_watch *tt__watch;

/* The progress bar of the compile tracing on this thread (compile.c
 * sets it; NULL: none): the tracer counts its nodes there. */
extern _Thread_local struct tt_progress *tt__trace_progress;

/* How many outputs a compiled function returns (0 for NULL). */
int tt__compiled_nout(const tt_compiled *c);

#endif
