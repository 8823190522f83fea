/* `tt --json`: the commands' results as one JSON document each, built
 * with jansson (it does the escaping). See tt_json.h. */
#include "tt_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Every helper below returns a new json_t (NULL when jansson runs out of
 * memory; a NULL added to an object or array makes that add fail, and
 * the caller then sees a NULL document). */

static json_t *shape_json(const tt_tensor *t)
{
    json_t *a = json_array();
    for (int d = 0; a && d < tt_ndim(t); d++) {
        tt_size s = tt_dim_size(t, d);
        /* A symbolic size is a symbol's name ("s0"), a concrete one a number. */
        if (tt_size_is_sym(s)) {
            char buf[64];
            tt_size_str(s, buf, sizeof buf);
            json_array_append_new(a, json_string(buf));
        } else {
            json_array_append_new(a, json_integer(s));
        }
    }
    return a;
}

/* {"dtype": "f32", "shape": [3, 64, 64]}, or null for no value. */
static json_t *value_json(const tt_tensor *t)
{
    if (!t)
        return json_null();
    return json_pack("{s:s, s:o}", "dtype", tt_dtype_name(tt_dtype_of(t)), "shape",
                     shape_json(t));
}

static const char *kind_name(tt_node_kind k)
{
    switch (k) {
    case TT_NODE_PLACEHOLDER: return "placeholder";
    case TT_NODE_CONSTANT: return "constant";
    case TT_NODE_OP: return "op";
    default: return "output";
    }
}

/* {"file", "line", "function"} (the file as __FILE__ spelled it), or null
 * when unknown. */
static json_t *srcloc_json(tt_srcloc loc)
{
    if (!loc.file)
        return json_null();
    return json_pack("{s:s, s:i, s:s}", "file", loc.file, "line", loc.line, "function",
                     loc.func ? loc.func : "");
}

/* One node: name, kind, op, its arguments ({"name", "value"} with the
 * schema's argument name, and "node" when it refers to one), the dtype
 * and shape of each output, and the user's line that made it. */
static json_t *node_json(const tt_graph *g, int i)
{
    tt_node_kind k = tt_graph_node_kind(g, i);
    json_t *n = json_pack("{s:s, s:s}", "name", tt_graph_node_name(g, i), "kind", kind_name(k));
    const tt_op *op = k == TT_NODE_OP ? tt_graph_node_op(g, i) : NULL;
    const tt_schema *s = op ? tt_op_schema(op) : NULL;
    if (!n)
        return NULL;
    if (op)
        json_object_set_new(n, "op", json_string(tt_op_name(op)));
    json_t *args = json_array();
    int nargs = tt_graph_node_num_args(g, i);
    for (int a = 0; args && a < nargs; a++) {
        char *text = tt_graph_node_arg_text(g, i, a);
        int ref = tt_graph_node_arg_node(g, i, a);
        json_t *arg = text ? json_pack("{s:s}", "value", text) : NULL;
        free(text);
        if (arg && s && a < tt_schema_nargs(s))
            json_object_set_new(arg, "name", json_string(tt_schema_arg(s, a)->name));
        if (arg && ref >= 0)
            json_object_set_new(arg, "node", json_string(tt_graph_node_name(g, ref)));
        if (!arg || json_array_append_new(args, arg)) {
            json_decref(args);
            args = NULL;
        }
    }
    json_object_set_new(n, k == TT_NODE_OUTPUT ? "results" : "args",
                        args ? args : json_null());
    if (k != TT_NODE_OUTPUT) {
        json_t *outs = json_array();
        for (int o = 0; outs && o < tt_graph_node_num_outputs(g, i); o++)
            json_array_append_new(outs, value_json(tt_graph_node_value(g, i, o)));
        json_object_set_new(n, "outputs", outs);
    }
    json_object_set_new(n, "location", srcloc_json(tt_graph_node_loc(g, i)));
    if (tt_graph_node_scope(g, i)) /* tt_scope_name_push's path, when one was open */
        json_object_set_new(n, "scope", json_string(tt_graph_node_scope(g, i)));
    return n;
}

json_t *tt_json_graph(const tt_graph *g)
{
    json_t *nodes = json_array();
    for (int i = 0; nodes && i < tt_graph_num_nodes(g); i++)
        if (json_array_append_new(nodes, node_json(g, i))) {
            json_decref(nodes);
            nodes = NULL;
        }
    char *text = tt_graph_to_text(g);
    /* json_pack takes the reference of an "o" value even when it fails. */
    json_t *j = json_pack("{s:i, s:i, s:o?, s:s?}", "num_inputs", tt_graph_num_inputs(g),
                          "num_outputs", tt_graph_num_outputs(g), "nodes", nodes, "text", text);
    free(text);
    return j;
}

json_t *tt_json_explain(const tt_explain *e)
{
    json_t *graphs = json_array(), *breaks = json_array();
    for (int i = 0; graphs && i < tt_explain_graph_count(e); i++)
        json_array_append_new(graphs, tt_json_graph(tt_explain_graph(e, i)));
    for (int i = 0; breaks && i < tt_explain_break_count(e); i++) {
        const tt_break_info *b = tt_explain_break(e, i);
        json_array_append_new(
            breaks, json_pack("{s:s, s:s, s:o, s:o}", "kind", tt_break_kind_name(b->kind),
                              "reason", b->reason ? b->reason : "", "op",
                              b->op ? json_string(b->op) : json_null(), "location",
                              srcloc_json(b->loc)));
    }
    return json_pack("{s:i, s:i, s:o?, s:o?}", "graph_count", tt_explain_graph_count(e),
                     "graph_break_count", tt_explain_break_count(e), "breaks", breaks,
                     "graphs", graphs);
}

static const char *result_name(tt_check_result r)
{
    switch (r) {
    case TT_CHECK_PASSED: return "passed";
    case TT_CHECK_FAILED: return "failed";
    case TT_CHECK_NOT_EXERCISED: return "not_exercised";
    default: return "not_run";
    }
}

json_t *tt_json_opcheck(const tt_opcheck_report *r)
{
    json_t *checks = json_array();
    int counts[4] = {0};
    for (int i = 0; checks && i < TT_OPCHECK_NCHECKS; i++) {
        const tt_opcheck_entry *c = &r->entries[i];
        counts[c->result < 4 ? c->result : 3]++;
        json_array_append_new(checks, json_pack("{s:s, s:s, s:s}", "check", c->check,
                                                "result", result_name(c->result), "message",
                                                c->message));
    }
    char *text = tt_opcheck_report_to_text(r);
    json_t *j = json_pack("{s:s, s:i, s:i, s:i, s:i, s:o?, s:s?}", "op", r->op, "passed",
                          counts[TT_CHECK_PASSED], "failed", counts[TT_CHECK_FAILED],
                          "not_exercised", counts[TT_CHECK_NOT_EXERCISED], "not_run",
                          counts[TT_CHECK_NOT_RUN], "checks", checks,
                          "report", text);
    free(text);
    return j;
}

json_t *tt_json_op(const tt_op *op, const char *schema)
{
    return json_pack("{s:s, s:s, s:b}", "name", tt_op_name(op), "schema", schema, "builtin",
                     tt_op_is_builtin(op));
}

json_t *tt_json_model_fn(const tt_model_fn *f)
{
    return json_pack("{s:s, s:i, s:i, s:s?, s:s?}", "name", f->name, "inputs", f->ninputs,
                     "outputs", f->noutputs ? f->noutputs : 1, "about", f->about,
                     "input_names", f->inputs);
}

static const char *profile_kind_name(tt_profile_kind k)
{
    switch (k) {
    case TT_PROFILE_OP: return "op";
    case TT_PROFILE_STEP: return "step";
    case TT_PROFILE_FUSED: return "fused";
    case TT_PROFILE_GEMM: return "gemm";
    case TT_PROFILE_CALL: return "call";
    case TT_PROFILE_COMPILE: return "compile";
    }
    return "unknown";
}

/* A count the profiler may not know (-1): null then, as a script reads
 * "unknown" more easily from null than from a sentinel. */
static json_t *known(int64_t v)
{
    return v < 0 ? json_null() : json_integer(v);
}

static json_t *profile_event_json(const tt_profile_event *e)
{
    json_t *j = json_pack("{s:s, s:s, s:I, s:i, s:I, s:I, s:o, s:o, s:I}", "name",
                          e->name ? e->name : "", "kind", profile_kind_name(e->kind), "thread",
                          (json_int_t)e->thread, "depth", e->depth, "start_ns",
                          (json_int_t)e->start_ns, "dur_ns", (json_int_t)e->dur_ns, "bytes",
                          known(e->bytes), "flops", known(e->flops), "live_bytes",
                          (json_int_t)e->live_bytes);
    if (!j)
        return NULL;
    json_object_set_new(j, "file", e->loc.file ? json_string(e->loc.file) : json_null());
    json_object_set_new(j, "line", e->loc.file ? json_integer(e->loc.line) : json_null());
    json_object_set_new(j, "function", e->loc.func ? json_string(e->loc.func) : json_null());
    json_object_set_new(j, "node", e->node ? json_string(e->node) : json_null());
    if (e->kind == TT_PROFILE_CALL) {
        json_object_set_new(j, "planned_bytes", json_integer(e->planned_bytes));
        json_object_set_new(j, "planned_buffers", json_integer(e->planned_buffers));
        json_object_set_new(j, "unshared_bytes", json_integer(e->unshared_bytes));
    }
    return j;
}

json_t *tt_json_profile(const tt_profile *p)
{
    json_t *events = json_array();
    int n = tt_profile_num_events(p);
    for (int i = 0; events && i < n; i++)
        if (json_array_append_new(events, profile_event_json(tt_profile_event_at(p, i)))) {
            json_decref(events);
            events = NULL;
        }
    int at = -1;
    int64_t peak = tt_profile_peak_bytes(p, &at);
    return json_pack("{s:o?, s:I, s:o}", "events", events, "peak_bytes", (json_int_t)peak,
                     "peak_event", at >= 0 ? json_integer(at) : json_null());
}

/* A number, or for one JSON cannot hold its name as a string. */
static json_t *real_json(double d)
{
    if (isnan(d))
        return json_string("nan");
    if (isinf(d))
        return json_string(d > 0 ? "inf" : "-inf");
    return json_real(d);
}

static json_t *string_or_null(const char *s)
{
    return s[0] ? json_string(s) : json_null();
}

json_t *tt_json_compare(const tt_compare_report *r)
{
    bool at_element = r->differs && r->element >= 0;
    bool node = r->node[0] != '\0';
    return json_pack("{s:b, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b}",
                     "differs", r->differs,
                     "output", r->output >= 0 ? json_integer(r->output) : json_null(),
                     "element", at_element ? json_integer(r->element) : json_null(),
                     "compiled_value", at_element ? real_json(r->compiled_value) : json_null(),
                     "eager_value", at_element ? real_json(r->eager_value) : json_null(),
                     "max_abs_diff", at_element ? real_json(r->max_abs_diff) : json_null(),
                     "what", string_or_null(r->what),
                     "node", string_or_null(r->node),
                     "node_op", node ? string_or_null(r->node_op) : json_null(),
                     "node_where", node ? string_or_null(r->node_where) : json_null(),
                     "node_max_diff", node ? real_json(r->node_max_diff) : json_null(),
                     "pass", r->pass ? json_string(tt_pass_name(r->pass)) : json_null(),
                     "without_passes", r->without_passes);
}

int tt_json_print(json_t *doc, FILE *f)
{
    if (!doc)
        return -1;
    int rc = json_dumpf(doc, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!rc && fputc('\n', f) == EOF)
        rc = -1;
    json_decref(doc);
    return rc;
}
