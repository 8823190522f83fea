/* Helpers for tests of traced and compiled C code: what
 * torch._dynamo.testing (CompileCounter), assertions on
 * torch._dynamo.explain and expecttest's snapshots give a PyTorch test.
 *
 * Plain functions, for Check, cmocka or assert(): each tt_expect_* returns
 * TT_OK when the expectation holds, and otherwise TT_EEXPECT with a
 * message (tt_errmsg) that says what was expected and what happened: the
 * break report with its C line, the guard that failed, a unified diff of
 * a graph's text. A call given bad arguments fails with TT_EINVAL as any
 * other call does.
 *
 *     ck_assert_msg(tt_expect_fullgraph(step, 2, in, NULL) == TT_OK, "%s", tt_errmsg());
 */
#ifndef TT_TESTING_H
#define TT_TESTING_H

#include "tt_trace.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the public API: see tt_runtime.h */

/* ---------------------------------------------------------- breaks */

/* fn traces into one graph: tt_explain_run on the inputs finds no break.
 * Otherwise the message is the explain report (each break's kind, reason
 * and the user's file:line). opts as tt_explain_run's (NULL: defaults). */
tt_status tt_expect_fullgraph(tt_fn fn, int nin, tt_tensor **inputs, const tt_trace_opts *opts);

/* fn traces into exactly ngraphs graphs, and break i (i < ngraphs - 1)
 * has reasons[i] in its kind name, reason or op (NULL reasons, or a NULL
 * entry: any break). */
tt_status tt_expect_graphs(tt_fn fn, int nin, tt_tensor **inputs, const tt_trace_opts *opts,
                           int ngraphs, const char *const *reasons);

/* ------------------------------------------------------ recompiles */

/* Calls c on each of ncalls input lists (inputs[k] holds c's inputs for
 * call k; the outputs are released) and expects no trace after the
 * first call: otherwise the message names the call and the guard that
 * failed ("in0.size(0) == 4 (got 5)"). A call that fails is its error. */
tt_status tt_expect_no_recompile(tt_compiled *c, int ncalls, tt_tensor **const *inputs);

/* ---------------------------------------------------------- graphs */

/* tt_graph_count_op (tt_trace.h) over every plan c has cached: the
 * per-op count of CompileCounter, and with op NULL its op_count (every
 * op node of every plan). -1 with TT_EINVAL for a NULL c. */
int tt_compiled_count_op(const tt_compiled *c, const char *op);

/* g calls op at least once / never (message: the graph's text). */
tt_status tt_expect_graph_has_op(const tt_graph *g, const char *op);
tt_status tt_expect_graph_lacks_op(const tt_graph *g, const char *op);
/* A custom op stays opaque: g calls it (one node per call), and it is a
 * custom op, not one of tt's built-ins that a decomposition could have
 * made. */
tt_status tt_expect_opaque(const tt_graph *g, const char *op);

/* -------------------------------------------------------- snapshots */

/* TT_SNAPSHOT_LINES keeps the user's lines ("# model.c:12 in mlp") in
 * the text compared; without it they are left out, so the snapshot
 * survives edits of the traced code that do not change the graph. */
#define TT_SNAPSHOT_LINES 1u

/* g's text (tt_graph_to_text) equals `expected` (an inline string);
 * on a difference the message is a unified diff, expected to actual. */
tt_status tt_expect_graph_text(const tt_graph *g, const char *expected, unsigned flags);

/* The same against the file at `path`. With the environment variable
 * TT_EXPECT_ACCEPT=1 (expecttest's EXPECTTEST_ACCEPT) a missing or
 * different file is written with the actual text instead, and the call
 * succeeds, saying so on stderr. */
tt_status tt_expect_graph_file(const tt_graph *g, const char *path, unsigned flags);

/* Two graphs give the same text (a traced reference against the graph
 * under test: a rewrite, another version of the model). On a difference
 * the message is the diff, and with dot_path (NULL: none) the DOT of both
 * graphs side by side, the differing nodes red, is written there. */
tt_status tt_expect_graphs_equal(const tt_graph *expected, const tt_graph *actual, unsigned flags,
                                 const char *dot_path);

/* ------------------------------------------------------- numerics */

/* What tt_compare_run found. */
typedef struct {
    bool differs;     /* a compiled output differs from eager's */
    int output;       /* the first that does (-1: none) */
    int64_t element;  /* its first element beyond the tolerance (-1: dtype or shape) */
    double compiled_value, eager_value, max_abs_diff;
    char what[256];   /* the difference in words */
    /* The TT_PASS_* bit whose pass, switched off alone, makes the
     * compiled result agree (0: none does), and whether it still differs
     * with every pass off (the traced graph itself computes another
     * result). */
    unsigned pass;
    bool without_passes;
    /* The first node whose value differs: every node's values recorded as
     * the eager run makes them (a real-mode trace) and as the compiled
     * plan's steps make them, compared at the same node. Its name, op,
     * "file:line in function", and largest difference; node is "" when
     * none differs before the outputs (or the runs cannot be matched). */
    char node[40], node_op[64], node_where[200];
    double node_max_diff;
} tt_compare_report;

/* Runs fn eagerly and compiled (opts as tt_compile's; each run on fresh
 * copies of the inputs) and compares the nout outputs: dtype, sizes and
 * each element within atol + rtol * |eager| (NaN equals NaN). On a
 * difference it finds the first node that differs, and compiles again
 * with each plan pass off in turn and names the one that makes it, as
 * PyTorch's CompilerBisector does.
 * Returns the first error of a run; the finding is in *report. */
tt_status tt_compare_run(tt_fn fn, int nin, tt_tensor **inputs, int nout,
                         const tt_trace_opts *opts, double rtol, double atol,
                         tt_compare_report *report);
/* The pass's name ("fuse", "epilogue", "inplace", "memplan"; "?"). */
const char *tt_pass_name(unsigned pass);
/* tt_compare_run as an expectation: TT_EEXPECT names the output, the
 * element, both values and the pass that makes the difference. */
tt_status tt_expect_compiled_matches_eager(tt_fn fn, int nin, tt_tensor **inputs, int nout,
                                           const tt_trace_opts *opts, double rtol, double atol);

/* ------------------------------------------------------- hash log */

/* From begin to end, the calling thread writes a line to path for each
 * op it calls eagerly and each step of the compiled plans it runs: the
 * op, the graph node (a step's), the user's file:line, and each value's
 * dtype, sizes and a 64-bit hash of its elements in order (FNV-1a of
 * their bytes: one bit of one element changes it, a layout does not). Two
 * logs of one program made apart (another thread count, another machine,
 * before and after a change) are compared afterwards with
 * tt_hash_log_compare. TT_HASH_LOG=path logs the thread that loads the
 * library until exit. TT_EINVAL: already logging, a path that cannot be
 * written, or (end) no log or a mode pushed after begin still on. */
tt_status tt_hash_log_begin(const char *path);
tt_status tt_hash_log_end(void);
/* TT_OK when two hash logs agree entry by entry; TT_EEXPECT naming the
 * first divergence: the entry, its op, node and file:line with both
 * values' hashes, or where the runs call different ops or one stops
 * early; TT_EINVAL when a file cannot be read or is not a hash log.
 * (`tt diff A B` on the command line.) */
tt_status tt_hash_log_compare(const char *a, const char *b);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
