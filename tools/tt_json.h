/* `tt --json`: each command's result as one JSON document on stdout, for
 * CI scripts and editors. Built with jansson, which does all escaping.
 *
 * Every builder returns a new json_t (the caller owns it), or NULL when
 * memory ran out. The documents:
 *   graph:   {"num_inputs", "num_outputs", "nodes": [{"name", "kind", "op",
 *             "args": [{"name", "value", "node"}], "outputs": [{"dtype",
 *             "shape"}], "location": {"file", "line", "function"}}...],
 *             "text"}  (the output node has "results"; "location", the
 *             user's call that made an op node, is null when unknown)
 *   explain: {"graph_count", "graph_break_count", "breaks": [{"kind",
 *             "reason", "op", "location": {"file", "line", "function"}}],
 *             "graphs": [graph...]}
 *   opcheck: {"op", "passed", "failed", "not_exercised", "not_run",
 *             "checks": [{"check", "result", "message"}], "report"}
 *   profile: {"events": [{"name", "kind" (op, step, fused, gemm, call,
 *             compile), "thread", "depth", "start_ns", "dur_ns", "bytes",
 *             "flops", "live_bytes", "file", "line", "function", "node"}],
 *             "peak_bytes", "peak_event"}  (bytes and flops are null when
 *             not known, file/line/function and node when there is none; a
 *             call event also has "planned_bytes", "planned_buffers" and
 *             "unshared_bytes"; peak_event indexes events, null when the
 *             peak was at the start)
 *   compare: {"differs", "output", "element", "compiled_value", "eager_value",
 *             "max_abs_diff", "what", "node", "node_op", "node_where",
 *             "node_max_diff", "pass", "without_passes"}
 *             (tt_compare_run's report; output and element are null when
 *             none differs or the dtype or shape does, the values when
 *             they are not known, a number that is not finite is the string
 *             "inf", "-inf" or "nan" (JSON has no such numbers); the node's
 *             fields are null when none was found, pass ("fuse") when no
 *             single pass makes the difference)
 */
#ifndef TT_JSON_H
#define TT_JSON_H

#include <jansson.h>
#include <stdio.h>

#include "tensortrace.h"

json_t *tt_json_graph(const tt_graph *g);
json_t *tt_json_explain(const tt_explain *e);
json_t *tt_json_opcheck(const tt_opcheck_report *r);
json_t *tt_json_op(const tt_op *op, const char *schema); /* {"name", "schema", "builtin"} */
json_t *tt_json_model_fn(const tt_model_fn *f); /* {"name", "inputs", "outputs", "about", "input_names"} */
json_t *tt_json_profile(const tt_profile *p);
json_t *tt_json_compare(const tt_compare_report *r);

/* Writes doc (indented, then a newline) to f and releases it. Returns 0,
 * or -1 when doc is NULL or the write failed. */
int tt_json_print(json_t *doc, FILE *f);

#endif /* TT_JSON_H */
