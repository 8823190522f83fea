/* tensortrace tracer: graphs of op calls recorded from C code, graph
 * breaks and their explanation, compiled replay, text and DOT printing,
 * and opcheck. (Rendering DOT to pictures: tt_render.h.)
 *
 * The tracer installs itself as a dispatch mode (tt_mode) of the runtime:
 * every op the traced function calls is recorded as a node holding the op,
 * its arguments (references to earlier nodes or constants) and the fake
 * (or real) value of each output. Custom ops are single opaque nodes.
 */
#ifndef TT_TRACE_H
#define TT_TRACE_H

#include "tt_ops.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the public API: see tt_runtime.h */

typedef enum {
    TT_TRACE_FAKE,     /* inputs become fake tensors; nothing is computed */
    TT_TRACE_REAL,     /* computes while it records */
    TT_TRACE_SYMBOLIC, /* fake, with input sizes as symbols s0, s1, ... */
} tt_trace_mode;

/* The passes of a compiled plan, each of which can be switched off
 * (tt_trace_opts.passes_off) to see what it buys; all run by default. */
typedef enum {
    /* Chains of elementwise ops run as one pass over memory. */
    TT_PASS_FUSE = 1u << 0,
    /* Work after a matrix product folded into its GEMM: w.add_(a @ b,
     * alpha=s) (an SGD update) becomes one GEMM accumulating into w; a
     * convolution's batch norm (inference form) and ReLU fold into it. */
    TT_PASS_EPILOGUE = 1u << 1,
    /* A result written over an operand whose memory nothing reads again. */
    TT_PASS_INPLACE = 1u << 2,
    /* Buffers placed by liveness in one block, planned on the first call:
     * later calls make no allocator calls for them and touch the same
     * memory each time. */
    TT_PASS_MEMPLAN = 1u << 3,
} tt_pass;

typedef struct {
    tt_trace_mode mode;
    /* The first graph break fails the trace (TT_EGRAPHBREAK) instead of
     * splitting it; as torch.compile(fullgraph=True). */
    bool fullgraph;
    int nout;   /* outputs the function writes; 0 means 1 */
    void *ud;   /* handed to the function */
    const char *name; /* printed as the graph's name; NULL: "forward" */
    /* Symbolic mode: only the first dynamic_inputs inputs get symbolic
     * sizes; the others (a model's parameters and optimizer state) keep
     * their sizes, as torch.compile keeps a module's parameters static.
     * 0: every input. */
    int dynamic_inputs;
    /* The graph inputs' names (one per input; NULL or a NULL entry: in0,
     * in1 ...), used by the printed graph, the DOT and guard messages.
     * tt_compile copies them, and the name. */
    const char *const *input_names;
    /* tt_compile: plans made for new input signatures before the function
     * runs eagerly for any further one (with a one-time warning naming the
     * guard that keeps failing); 0: 8, as dynamo's cache_size_limit. */
    int recompile_limit;
    unsigned passes_off; /* tt_compile: TT_PASS_* bits of passes to skip */
    /* tt_compile: what fn reads through ud is not a tensor, so the plan
     * would freeze the values it saw while tracing. ud_size declares the
     * bytes of *ud fn reads: each compiled call compares them with the
     * bytes a plan was traced with and traces again when they differ
     * (TT_LOG=recompiles names the byte), as dynamo guards on the Python
     * values a function reads. Pointers inside *ud are guarded as
     * addresses, not followed. Values that change per call are better
     * passed as scalar arguments (tt_compiled_call_args). */
    size_t ud_size;
    /* tt_compile: the caller promises that nothing fn reads through ud
     * ever changes (weights, a config): no guard. Without ud_size or this,
     * a compile with a non-NULL ud warns once that ud is frozen. */
    bool ud_constant;
    /* tt_compile: bit i marks scalar argument i (tt_compiled_call_args)
     * dynamic. A dynamic int is a symbol in symbolic mode (one plan for
     * its values of 2 and more; 0 and 1 are specialized, as dynamo does),
     * a guarded constant in fake mode; a dynamic float is read with
     * tt_fn_arg_tensor as a 0-dim f64 graph input. Scalars not marked are
     * constants in the plan, guarded: a new value traces again. */
    uint64_t dynamic_args;
} tt_trace_opts;

typedef struct tt_graph tt_graph;

/* Traces fn(inputs) into one graph. In fullgraph mode a graph break is
 * TT_EGRAPHBREAK; otherwise a break is also an error here (use tt_explain
 * or tt_compile for code with breaks). The inputs are not modified. */
tt_graph *tt_trace(tt_fn fn, int nin, tt_tensor **inputs, const tt_trace_opts *opts);
tt_graph *tt_graph_free(tt_graph *g); /* NULL-safe; returns NULL */

/* Inspection. Nodes are numbered in execution order. */
typedef enum {
    TT_NODE_PLACEHOLDER, /* an input */
    TT_NODE_CONSTANT,    /* a tensor made outside the graph (lifted) */
    TT_NODE_OP,          /* an op call */
    TT_NODE_OUTPUT,      /* the graph's results */
} tt_node_kind;

int tt_graph_num_nodes(const tt_graph *g);
int tt_graph_num_inputs(const tt_graph *g);
int tt_graph_num_outputs(const tt_graph *g);
tt_node_kind tt_graph_node_kind(const tt_graph *g, int node);
const char *tt_graph_node_name(const tt_graph *g, int node); /* "add_1" */
const tt_op *tt_graph_node_op(const tt_graph *g, int node);   /* op nodes */
/* The value recorded for output `out` of a node (borrowed): fake in fake
 * and symbolic modes. */
const tt_tensor *tt_graph_node_value(const tt_graph *g, int node, int out);
int tt_graph_node_num_outputs(const tt_graph *g, int node);
/* An op that writes an argument it does not return (a mutable custom op,
 * schema "Tensor(a!) cache -> ()") gets an output after its results for
 * each such argument: the argument's value after the write, which later
 * reads of that tensor take as input (as they take a built-in in-place
 * op's result), so the write comes before them in every data-edge order.
 * tt_graph_node_written_arg gives the argument index of such an output,
 * -1 for a result the op returns; -2 with TT_EINVAL for no such output. */
int tt_graph_node_written_arg(const tt_graph *g, int node, int out);
/* What a node reads: an op node's arguments in schema order (defaults
 * filled), or the output node's results. tt_graph_node_arg_text spells
 * argument i as the text print does ("in0", "[0, 0, 10, 10]", "0.5"; a
 * string to free()); tt_graph_node_arg_node gives the node it refers to,
 * -1 for a constant or a list. Errors: -1 / NULL / -2 with TT_EINVAL. */
int tt_graph_node_num_args(const tt_graph *g, int node);
char *tt_graph_node_arg_text(const tt_graph *g, int node, int i);
int tt_graph_node_arg_node(const tt_graph *g, int node, int i);
/* The user's call that made an op node: the file as __FILE__ spelled it,
 * the line and the function (the graph's copies; {0} for other nodes and
 * for ops called where no line is known, such as inside the library or
 * through a function pointer). The innermost call made from the user's
 * code counts, so tt_linear's matmul has tt_linear's line. */
tt_srcloc tt_graph_node_loc(const tt_graph *g, int node);
/* Named scopes, as PyTorch's nn_module_stack names a node's module: ops
 * traced between tt_scope_name_push("block3") and its pop, on this
 * thread, record the path of the scopes open ("block3/attn" inside a
 * nested push of "attn"). The text prints it with the node's line, and
 * the DOT draws one cluster per scope, nested. A name is 1 to 63
 * characters without '/'; scopes nest 32 deep at most; a pop with none
 * open is TT_EINVAL. Outside a trace they cost a push and a pop. */
tt_status tt_scope_name_push(const char *name);
tt_status tt_scope_name_pop(void);
/* An op node's scope path, or NULL (none, or not an op node). */
const char *tt_graph_node_scope(const tt_graph *g, int node);
/* Number of op nodes whose op is `name` ("mylib::crop"; an overload-less
 * name matches every overload). */
int tt_graph_count_op(const tt_graph *g, const char *name);
/* Checks the graph's invariants (references point backwards, users are
 * consistent, every value exists). */
tt_status tt_graph_verify(const tt_graph *g);

/* Readable text in the spirit of FX's print_readable: one line per node
 * with its op, arguments and output dtype/shape, and as a comment the
 * arguments it writes and the user's line that made it ("# writes in0;
 * model.c:12 in mlp": the file's base name, so the text does not depend
 * on where the build ran). Returns a string the caller frees with free(),
 * or NULL on failure. */
char *tt_graph_to_text(const tt_graph *g);
tt_status tt_graph_print(const tt_graph *g, FILE *f);

/* The functionalization pass: in-place built-ins (tt::add_, tt::relu_ ...)
 * whose written value has no other alias in the graph become their
 * functional forms, and each graph input they wrote gets its final value
 * copied back (tt::copy_) before the output, so running the graph has the
 * same effect as before. Mutable custom ops keep their mutation. */
tt_status tt_graph_functionalize(tt_graph *g);

/* Runs the graph on real inputs (the interpreter). outputs receive new
 * references. Ops run eagerly, without autograd recording: a traced
 * backward is already in the graph. */
tt_status tt_graph_run(const tt_graph *g, int nin, tt_tensor **inputs, int nout,
                       tt_tensor **outputs);

/* ------------------------------------------------------ graph breaks */

/* Calls that read a traced tensor's data break the graph; so do ops with
 * no fake kernel and explicit breaks. tt_graph_break is a macro so that
 * the report names the caller's line. */
#define tt_graph_break(reason) tt_graph_break_at((reason), TT_HERE)
tt_status tt_graph_break_at(const char *reason, tt_srcloc loc);

typedef enum {
    TT_BREAK_DATA_READ,      /* tt_data / tt_item / tt_get on a traced tensor */
    TT_BREAK_NO_FAKE_KERNEL, /* an op that cannot run on fake tensors */
    TT_BREAK_EXPLICIT,       /* tt_graph_break("...") */
    /* tt_size_lt/le/eq/int on a data-dependent size its bounds do not
     * decide (PyTorch: "Could not guard on data-dependent expression") */
    TT_BREAK_DATA_DEPENDENT,
} tt_break_kind;

typedef struct {
    tt_break_kind kind;
    const char *reason; /* one sentence */
    const char *op;     /* the op involved, or NULL */
    tt_srcloc loc;      /* the user's line (file, line, function) */
} tt_break_info;

const char *tt_break_kind_name(tt_break_kind k); /* "data read" ... */

/* ------------------------------------------------------------- explain */

/* Like torch._dynamo.explain: runs fn on the real inputs, splitting the
 * trace at each break (the code between graphs runs eagerly). It reports
 * the breaks a fake trace hits too: a custom op whose fake kernel reads
 * data is a break at the op's line, and the op runs eagerly. */
typedef struct tt_explain tt_explain;
tt_explain *tt_explain_run(tt_fn fn, int nin, tt_tensor **inputs,
                           const tt_trace_opts *opts);
tt_explain *tt_explain_free(tt_explain *e);
int tt_explain_graph_count(const tt_explain *e);
int tt_explain_break_count(const tt_explain *e); /* graph_count - 1 */
const tt_graph *tt_explain_graph(const tt_explain *e, int i);
const tt_break_info *tt_explain_break(const tt_explain *e, int i);
/* "Graph count: 2\nGraph break count: 1\nBreak 1: ..." (free()). */
char *tt_explain_to_text(const tt_explain *e);

/* ------------------------------------------------------------- compile */

/* tt_compile returns a callable. The first call traces fn (fake or
 * symbolic mode, per opts) and builds a plan; later calls whose inputs
 * satisfy the plan's guards replay it without running fn. Guards: dtype,
 * rank, requires_grad, and sizes and strides (fake mode), or in symbolic
 * mode the layout (each stride of a dim of size >= 2 as an expression
 * of the symbolic sizes or a constant; the storage offset a symbol), the
 * 0/1 sizes and offsets that were specialized, and every comparison of
 * symbolic sizes made while tracing. A call failing every cached plan's
 * guards traces again and caches another plan. With
 * fullgraph off, a function that breaks the graph runs eagerly (its result
 * is the eager result); with fullgraph on, the break is the call's error. */
typedef struct tt_compiled tt_compiled;

typedef struct {
    int64_t calls;
    int64_t hits;        /* replayed a cached plan */
    int64_t misses;      /* traced (first call, or guards failed) */
    int64_t eager_calls; /* ran fn eagerly because of graph breaks */
    int plans;           /* plans cached */
    int graph_breaks;    /* breaks seen when tracing */
    /* Why the last miss happened: "first call" or the failed guard,
     * e.g. "in0.size(1) == 4 (got 5)". */
    char last_miss[256];
    bool at_recompile_limit; /* new signatures run eagerly */
    /* What the passes did to the newest plan: */
    int fused_steps;       /* elementwise chains (or lone ops run in place) */
    int fused_ops;         /* ops inside them */
    int epilogues;         /* updates folded into their matrix product */
    int conv_epilogues;    /* batch norms (inference) and ReLUs folded into convolutions */
    /* The memory plan's block (after its first run). A symbolic plan's
     * serves every binding of its symbols: a call whose sizes outgrow it
     * takes the allocator for those buffers, and the next call plans
     * again with twice the room for what grew (0 between the two). */
    int64_t planned_bytes;
} tt_compile_stats;

tt_compiled *tt_compile(tt_fn fn, int nin, int nout, const tt_trace_opts *opts);
tt_compiled *tt_compiled_free(tt_compiled *c); /* NULL-safe; returns NULL */
/* outputs receive new references. */
tt_status tt_compiled_call(tt_compiled *c, tt_tensor **inputs, tt_tensor **outputs);
void tt_compiled_stats(const tt_compiled *c, tt_compile_stats *out);

/* A compiled call with scalar arguments (TT_V_INT or TT_V_FLOAT, at most
 * TT_MAX_SCALAR_ARGS), the channel for values that change from call to
 * call (a decoder's position, a learning rate). fn reads them with
 * tt_fn_arg_int / tt_fn_arg_float / tt_fn_arg_tensor; a plan guards on each
 * one fn read (its kind, and its value unless it is dynamic: see
 * tt_trace_opts.dynamic_args), so a compiled call never replays a value
 * it did not trace with. tt_compiled_call is this with no scalars. */
#define TT_MAX_SCALAR_ARGS 64
tt_status tt_compiled_call_args(tt_compiled *c, tt_tensor **inputs, tt_tensor **outputs,
                                const tt_value *args, int nargs);
/* Scalar argument i of the compiled call running fn on this thread. A
 * missing argument, one of another kind, or a call outside a compiled
 * call returns 0 (NULL) with TT_EINVAL, and the compiled call fails with
 * that message once fn returns. tt_fn_arg_int gives an int (in a
 * symbolic trace a dynamic one is a size symbol: compute with tt_sym_*
 * and compare with tt_size_eq/lt/le, which record guards, never with C
 * operators); tt_fn_arg_float a float (an int argument converts);
 * tt_fn_arg_tensor a dynamic float as a borrowed 0-dim f64 tensor, a
 * graph input, so one plan serves every value. */
int64_t tt_fn_arg_int(int i);
double tt_fn_arg_float(int i);
tt_tensor *tt_fn_arg_tensor(int i);
/* The graph of cached plan i (in the order they were made), after the
 * plan's passes; NULL when there is none. */
const tt_graph *tt_compiled_graph(const tt_compiled *c, int i);

/* ------------------------------------------------------------- logging */

/* Like PyTorch's TORCH_LOGS: compile and explain say what they did on
 * stderr, one line per event, for the topics of a comma list:
 *   graph_breaks  each break: its kind, file:line and reason
 *   guards        each new plan's guards, one per input (and per size
 *                 comparison of a symbolic plan)
 *   recompiles    the guard that failed: "recompile mlp_step: guard
 *                 failed: in0.size(0) == 256 (got 128)"
 *   graph         the captured graph's text
 *   plan          the passes applied, steps, fused kernels, buffers
 *   perf          trace and plan times
 * or "all". The TT_LOG environment variable sets the list when first
 * needed; tt_set_log replaces it (NULL or "": off). A word that is no
 * topic is TT_EINVAL (in TT_LOG, a warning). Warnings (the recompile
 * limit, a fall back to eager) are printed whatever the topics. */
tt_status tt_set_log(const char *topics);
void tt_set_log_stream(FILE *f); /* where the lines go; NULL: stderr */

/* ---------------------------------------------------- DOT and pictures */

/* DOT text of a graph (free() it), or NULL on failure. Deterministic: the
 * same graph always gives the same bytes (nodes are n0, n1, ... in graph
 * order). Placeholders, constants, built-in ops, custom ops (opaque: bold
 * double border, orange) and the output are styled apart; an argument the
 * op writes is a red dashed edge labelled "writes"; edges are labelled with
 * the argument ("#1 self") or the output index. */
char *tt_graph_to_dot(const tt_graph *g);
/* The same with the named scopes `depth` levels deep collapsed: each one
 * box ("attn\n23 ops") for all its nodes, nested scopes included, its
 * edges to the rest merged (one per pair of ends), the scopes above it
 * still clusters; inputs and constants read only inside boxes (a layer's
 * weights) are left out, and the title counts them. depth 1 draws a
 * model as its top-level blocks; a large graph lays out in a fraction of
 * the time. depth <= 0: tt_graph_to_dot. */
char *tt_graph_to_dot_collapsed(const tt_graph *g, int depth);
/* tt_graph_to_dot_collapsed, with each run of consecutive boxes of one
 * parent that compute the same ops in the same order (a model's repeated
 * layers) drawn as one: "layer0 … layer11", "×12, 40 ops each". */
char *tt_graph_to_dot_merged(const tt_graph *g, int depth);
tt_status tt_graph_write_dot(const tt_graph *g, FILE *f); /* f NULL: stdout */
/* Every graph of an explain result as a cluster "graph N", with each break
 * drawn as a red octagon (kind, reason, file:line) between the graphs. */
char *tt_explain_to_dot(const tt_explain *e);
tt_status tt_explain_write_dot(const tt_explain *e, FILE *f);
/* Pictures (SVG, PNG) through graphviz: tt_render.h, in a library of its
 * own (pkg-config module tensortrace-render). */

/* --------------------------------------------------------------- opcheck */

/* tt_opcheck validates a custom op's registration on one set of example
 * arguments, as torch.library.opcheck does. The caller's tensors are
 * cloned first and never touched. */
typedef enum {
    TT_OPCHECK_SCHEMA = 1 << 0,                /* mutation and aliasing vs the schema */
    TT_OPCHECK_AUTOGRAD_REGISTRATION = 1 << 1, /* trainable inputs need autograd */
    TT_OPCHECK_FAKETENSOR = 1 << 2,            /* the fake kernel matches the real one */
    TT_OPCHECK_AOT_DISPATCH_DYNAMIC = 1 << 3,  /* traced (symbolic) and replayed == eager */
    TT_OPCHECK_ALL = 0xf,
} tt_opcheck_check;

typedef struct {
    unsigned checks;      /* a mask of tt_opcheck_check; 0: all */
    bool raise_exception; /* stop at the first failure */
    double atol, rtol;    /* aot_dispatch_dynamic tolerances; 0: 1e-5 / 1.3e-6 */
} tt_opcheck_opts;

typedef enum {
    TT_CHECK_PASSED,
    TT_CHECK_FAILED,
    TT_CHECK_NOT_EXERCISED, /* e.g. no input requires grad */
    TT_CHECK_NOT_RUN,       /* not selected, or after a failure with raise */
} tt_check_result;

#define TT_OPCHECK_NCHECKS 4

typedef struct {
    const char *check;    /* "schema", "autograd_registration", ... */
    tt_check_result result;
    char message[1024];   /* for a failure: what was expected and found */
} tt_opcheck_entry;

typedef struct {
    char op[128];
    tt_opcheck_entry entries[TT_OPCHECK_NCHECKS];
} tt_opcheck_report;

/* Runs the selected checks. Returns TT_OK when none failed, TT_EOPCHECK
 * (with the first failure's paragraph as the message) when one did, or
 * another error when the op could not be run at all. report may be NULL. */
tt_status tt_opcheck(const tt_op *op, const tt_value *args, int nargs,
                     const tt_opcheck_opts *opts, tt_opcheck_report *report);
/* "opcheck mylib::crop: 3 passed, 1 failed, 0 not exercised" then a
 * paragraph per check. */
char *tt_opcheck_report_to_text(const tt_opcheck_report *r); /* free() */
tt_status tt_opcheck_report_print(const tt_opcheck_report *r, FILE *f);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* TT_TRACE_H */
