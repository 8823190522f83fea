/* Fuzz target: the schema language, end to end. The input is a schema
 * text. When it parses:
 *  - its canonical print re-parses to the same schema (same print, same
 *    arguments, types, defaults and alias annotations), and printing is
 *    stable (print(parse(print(s))) == print(s));
 *  - it defines as a custom op in a fragment of its namespace, is found by
 *    its name, and is called eagerly and traced in each mode (fake, real,
 *    symbolic) with arguments made from its types, through kernels that
 *    return what the schema promises.
 * A failure of any call is fine (the input may be hostile); a crash, a
 * sanitizer report, a leak, or a call that fails without an error set is
 * not. Built with libFuzzer (tests/fuzz/meson.build, tools/run fuzz). */
#include "tensortrace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"

/* The argument values of one call, kept alive for its duration. */
typedef struct {
    tt_value args[64];
    int nargs;
    int64_t ints[64][8];
    double floats[64][8];
    bool bools[64][8];
    tt_tensor *lists[64][2];
} call_args;

static int list_len(const tt_type *t)
{
    return t->list_size > 0 ? (t->list_size < 8 ? t->list_size : 8) : 2;
}

/* A value of type t (x is the tensor every Tensor argument gets). A sized
 * list longer than 8 gets a wrong length on purpose: the call must refuse
 * it. */
static tt_value make_value(call_args *c, int i, const tt_type *t, tt_tensor *x)
{
    int n = list_len(t);
    if (t->is_list) {
        switch (t->base) {
        case TT_T_TENSOR:
            c->lists[i][0] = x;
            c->lists[i][1] = t->elem_optional ? NULL : x;
            return tt_v_tensors(2, c->lists[i]);
        case TT_T_FLOAT:
            for (int k = 0; k < n; k++)
                c->floats[i][k] = 0.5;
            return tt_v_floats(n, c->floats[i]);
        case TT_T_BOOL:
            for (int k = 0; k < n; k++)
                c->bools[i][k] = k & 1;
            return tt_v_bools(n, c->bools[i]);
        default:
            for (int k = 0; k < n; k++)
                c->ints[i][k] = 1;
            return tt_v_ints(n, c->ints[i]);
        }
    }
    switch (t->base) {
    case TT_T_TENSOR: return tt_v_tensor(x);
    case TT_T_INT:
    case TT_T_SYMINT: return tt_v_int(1);
    case TT_T_FLOAT:
    case TT_T_SCALAR: return tt_v_float(0.5);
    case TT_T_BOOL: return tt_v_bool(true);
    case TT_T_STR: return tt_v_str("s");
    case TT_T_SCALARTYPE: return tt_v_dtype(TT_F32);
    case TT_T_DEVICE: return tt_v_device(TT_DEV_CPU);
    case TT_T_LAYOUT:
    case TT_T_MEMORY_FORMAT: return tt_v_int(0);
    }
    return tt_v_none();
}

static void make_args(call_args *c, const tt_schema *s, tt_tensor *x)
{
    c->nargs = tt_schema_nargs(s) < 64 ? tt_schema_nargs(s) : 64;
    for (int i = 0; i < c->nargs; i++)
        c->args[i] = make_value(c, i, &tt_schema_arg(s, i)->type, x);
}

/* The kernel (real or fake): each return gets what its type promises; a
 * return annotated as an alias of an argument returns that argument. */
static tt_status kernel(tt_frame *f)
{
    const tt_schema *s = tt_op_schema(tt_frame_op(f));
    tt_tensor *like = NULL;
    for (int i = 0; i < tt_frame_nargs(f) && !like; i++) {
        const tt_value *v = tt_frame_arg(f, i);
        if (v->kind == TT_V_TENSOR && v->u.t)
            like = v->u.t;
    }
    for (int r = 0; r < tt_schema_nreturns(s); r++) {
        const tt_arg *ret = tt_schema_return(s, r);
        tt_status st = TT_OK;
        int self = -1;
        for (int i = 0; ret->alias_set && i < tt_schema_nargs(s); i++) {
            const tt_arg *a = tt_schema_arg(s, i);
            if (a->alias_set && strcmp(a->alias_set, ret->alias_set) == 0)
                self = i;
        }
        if (ret->type.is_list && ret->type.base == TT_T_TENSOR) {
            tt_tensor *ts[2] = {like ? tt_empty_like(like) : tt_zeros(TT_SHAPE(2), TT_F32),
                                like ? tt_empty_like(like) : tt_zeros(TT_SHAPE(2), TT_F32)};
            if (!ts[0] || !ts[1]) {
                tt_release(ts[0]);
                tt_release(ts[1]);
                return tt_frame_fail(f, tt_errcode(), "%s", tt_errmsg());
            }
            st = tt_return_tensors(f, r, 2, ts);
        } else if (ret->type.base == TT_T_TENSOR && self >= 0 &&
                   tt_frame_arg(f, self)->kind == TT_V_TENSOR) {
            st = tt_return_self(f, r, self);
        } else if (ret->type.base == TT_T_TENSOR) {
            tt_tensor *t = like ? tt_empty_like(like) : tt_zeros(TT_SHAPE(2), TT_F32);
            if (!t)
                return tt_frame_fail(f, tt_errcode(), "%s", tt_errmsg());
            st = tt_return(f, r, t);
        } else if (ret->type.base == TT_T_FLOAT) {
            st = tt_return_value(f, r, tt_v_float(0.5));
        } else if (ret->type.base == TT_T_BOOL) {
            st = tt_return_value(f, r, tt_v_bool(true));
        } else {
            st = tt_return_value(f, r, tt_v_int(1));
        }
        if (st != TT_OK)
            return st;
    }
    return TT_OK;
}

typedef struct {
    const tt_op *op;
} trace_ud;

/* The traced function: the op on the input, then its first tensor result
 * (or the input) as the output. */
static tt_status traced(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin;
    (void)nout;
    const tt_op *op = ((trace_ud *)ud)->op;
    call_args c;
    make_args(&c, tt_op_schema(op), in[0]);
    tt_value outs[8] = {{0}};
    int nouts = tt_schema_nreturns(tt_op_schema(op));
    if (nouts > 8)
        nouts = 8;
    tt_status st = tt_op_call(op, c.args, c.nargs, outs, nouts);
    if (st == TT_OK) {
        out[0] = outs[0].kind == TT_V_TENSOR && outs[0].u.t ? tt_retain(outs[0].u.t)
                                                           : tt_clone(in[0]);
        if (!out[0])
            st = tt_errcode();
    }
    for (int i = 0; i < nouts; i++)
        tt_value_clear(&outs[i]);
    return st;
}

/* parse(print(s)) equals s, field by field. */
static void check_reparse(const tt_schema *s, const char *printed)
{
    tt_schema *again = tt_schema_parse(printed);
    FUZZ_CHECK(again, "the printed schema '%s' does not parse: %s", printed, tt_errmsg());
    char *printed2 = fuzz_schema_str(again);
    FUZZ_CHECK(strcmp(printed, printed2) == 0, "print is not stable: '%s' then '%s'",
               printed, printed2);
    FUZZ_CHECK(tt_schema_nargs(s) == tt_schema_nargs(again) &&
                   tt_schema_nreturns(s) == tt_schema_nreturns(again) &&
                   strcmp(tt_schema_ns(s), tt_schema_ns(again)) == 0 &&
                   strcmp(tt_schema_name(s), tt_schema_name(again)) == 0 &&
                   strcmp(tt_schema_overload(s), tt_schema_overload(again)) == 0,
               "'%s' re-parses to a different signature", printed);
    for (int k = 0; k < tt_schema_nargs(s) + tt_schema_nreturns(s); k++) {
        bool ret = k >= tt_schema_nargs(s);
        int i = ret ? k - tt_schema_nargs(s) : k;
        const tt_arg *a = ret ? tt_schema_return(s, i) : tt_schema_arg(s, i);
        const tt_arg *b = ret ? tt_schema_return(again, i) : tt_schema_arg(again, i);
        FUZZ_CHECK(memcmp(&a->type, &b->type, sizeof a->type) == 0 &&
                       strcmp(a->name, b->name) == 0 && a->kwarg_only == b->kwarg_only &&
                       a->has_default == b->has_default && a->is_write == b->is_write &&
                       a->alias_after_wildcard == b->alias_after_wildcard &&
                       !a->alias_set == !b->alias_set &&
                       (!a->alias_set || strcmp(a->alias_set, b->alias_set) == 0),
                   "'%s': %s %d differs after re-parsing", printed,
                   ret ? "return" : "argument", i);
        if (a->has_default) {
            char da[256], db[256];
            tt_value_describe(&a->default_value, da, sizeof da);
            tt_value_describe(&b->default_value, db, sizeof db);
            FUZZ_CHECK(strcmp(da, db) == 0, "'%s': the default of %s differs (%s, %s)",
                       printed, a->name, da, db);
        }
    }
    free(printed2);
    tt_schema_free(again);
}

/* Defines s's op in a fragment of its namespace, finds it, calls it and
 * traces it in every mode. */
static void define_and_run(const tt_schema *s, const char *text)
{
    tt_library *lib = tt_library_new(TT_LIB_FRAGMENT, tt_schema_ns(s));
    if (!lib) {
        FUZZ_CHECK(tt_errcode() != TT_OK, "tt_library_new failed with no error");
        return;
    }
    tt_custom_op_spec spec = {.schema = text, .kernel = kernel, .fake = kernel};
    tt_op *op = tt_custom_op_define(lib, &spec);
    if (!op) {
        FUZZ_CHECK(tt_errcode() != TT_OK, "defining '%s' failed with no error", text);
        tt_library_free(lib);
        return;
    }
    char qual[1024];
    snprintf(qual, sizeof qual, "%s::%s%s%s", tt_schema_ns(s), tt_schema_name(s),
             tt_schema_overload(s)[0] ? "." : "", tt_schema_overload(s));
    FUZZ_CHECK(tt_op_find(qual) == op, "'%s' defined but tt_op_find(\"%s\") does not find it",
               text, qual);

    tt_tensor *x = tt_ones(TT_SHAPE(2, 3), TT_F32);
    FUZZ_CHECK(x, "tt_ones failed: %s", tt_errmsg());
    trace_ud ud = {op};
    tt_tensor *out = NULL;
    tt_clear_error();
    if (traced(&x, 1, &out, 1, &ud) != TT_OK)
        FUZZ_CHECK(tt_errcode() != TT_OK, "calling '%s' failed with no error", text);
    tt_release(out);
    for (int mode = TT_TRACE_FAKE; mode <= TT_TRACE_SYMBOLIC; mode++) {
        tt_trace_opts opts = {.mode = (tt_trace_mode)mode, .fullgraph = true, .ud = &ud};
        tt_clear_error();
        tt_graph *g = tt_trace(traced, 1, &x, &opts);
        if (!g) {
            FUZZ_CHECK(tt_errcode() != TT_OK, "tracing '%s' failed with no error", text);
            continue;
        }
        FUZZ_CHECK(tt_graph_verify(g) == TT_OK, "the graph of '%s' is broken: %s", text,
                   tt_errmsg());
        free(tt_graph_to_text(g));
        free(tt_graph_to_dot(g));
        tt_graph_free(g);
    }
    tt_release(x);
    tt_library_free(lib);
    FUZZ_CHECK(!tt_op_find(qual), "'%s' is still found after its library was freed", qual);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    tt_clear_error();
    tt_schema *s = tt_schema_parse(text);
    if (!s) {
        FUZZ_CHECK(tt_errcode() != TT_OK && tt_errmsg()[0],
                   "'%s' was refused with no error message", text);
    } else {
        char *printed = fuzz_schema_str(s);
        check_reparse(s, printed);
        define_and_run(s, text);
        free(printed);
        tt_schema_free(s);
    }
    free(text);
    tt_sym_reset();
    FUZZ_CHECK(tt_live_tensors() == 0, "%lld tensors leaked", (long long)tt_live_tensors());
    return 0;
}
