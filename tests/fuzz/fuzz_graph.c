/* Fuzz target: graphs and their writers. The input is a small program:
 *   byte 0: trace mode (fake, real, symbolic) and whether to also explain
 *   byte 1: n, then n bytes: the graph's name (any bytes, quotes, braces)
 *   then steps of 2 bytes (op, operand), each pushing a tensor made from
 *   the stack: elementwise, reductions, views, matrix products, cat, a
 *   data read, an explicit break whose reason is the rest of the input.
 * The program is traced (fullgraph) and, when asked, explained on real
 * inputs. Every graph made must verify; its text and its DOT are made,
 * and the DOT (of the graph and of the explain result) must parse back
 * with graphviz's cgraph. A step that fails (wrong shapes) ends the
 * program with an error; that error must be set. */
#include "tensortrace.h"

#include <graphviz/cgraph.h>

#include "fuzz_util.h"

#define STACK 16

typedef struct {
    const unsigned char *code;
    size_t n;
    const char *reason; /* a break's reason */
} program;

static tt_tensor *step(tt_tensor **st, int top, unsigned op, unsigned arg, const char *reason,
                       tt_status *brk)
{
    tt_tensor *a = st[top - 1], *b = st[(arg >> 4) % top];
    int dim = (int)(arg & 7) - 4;
    int64_t dims[1] = {dim};
    switch (op % 20) {
    case 0: return tt_add(a, b);
    case 1: return tt_mul(a, b);
    case 2: return tt_div(a, b);
    case 3: return tt_relu(a);
    case 4: return tt_exp(a);
    case 5: return tt_sum(a, 1, dims, arg & 8);
    case 6: return tt_amax(a, 1, dims, arg & 8);
    case 7: return tt_softmax(a, dim);
    case 8: return tt_transpose(a, dim, (int)(arg >> 5) - 4);
    case 9: return tt_unsqueeze(a, dim);
    case 10: return tt_matmul(a, b);
    case 11: {
        tt_tensor *ts[2] = {a, b};
        return tt_cat(2, ts, dim);
    }
    case 12: return tt_narrow(a, dim, arg >> 6, 1);
    case 13: return tt_sum_all(a);
    case 14: return tt_where(tt_gt(a, b), a, b); /* leaks nothing: scoped */
    case 15: return tt_mul_scalar(a, (double)arg - 128);
    case 16: return tt_contiguous(a);
    case 17: return tt_reshape(a, 1, (const int64_t[]){-1});
    case 18: {
        double v;
        if (tt_item(a, &v) != TT_OK && tt_errcode() == TT_EGRAPHBREAK)
            *brk = TT_EGRAPHBREAK;
        return tt_neg(a);
    }
    default:
        if (tt_graph_break(reason) != TT_OK)
            *brk = tt_errcode();
        return tt_clone(a);
    }
}

/* Runs the program in a scope: two inputs, each step pushing a tensor; the
 * output is the top of the stack. */
static tt_status run_program(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin;
    (void)nout;
    const program *p = ud;
    tt_tensor *st[STACK] = {in[0], in[1]};
    int top = 2;
    tt_status brk = TT_OK;
    tt_scope_begin();
    for (size_t i = 0; i + 1 < p->n && i < 64; i += 2) {
        tt_tensor *t = step(st, top, p->code[i], p->code[i + 1], p->reason, &brk);
        if (brk != TT_OK)
            break;
        if (!t)
            break;
        if (top == STACK)
            memmove(st + 2, st + 3, sizeof st[0] * (STACK - 3)), top--;
        st[top++] = t;
    }
    tt_status status = brk != TT_OK ? brk : tt_errcode();
    out[0] = tt_keep(tt_clone(st[top - 1]));
    tt_scope_end();
    if (!out[0])
        return tt_errcode();
    return status == TT_EGRAPHBREAK ? status : TT_OK;
}

static void check_dot(char *dot, const char *what)
{
    FUZZ_CHECK(dot, "%s: no DOT: %s", what, tt_errmsg());
    Agraph_t *g = agmemread(dot);
    FUZZ_CHECK(g, "%s: the DOT does not parse:\n%s", what, dot);
    agclose(g);
    free(dot);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t nlen = data[1] < size - 2 ? data[1] : size - 2;
    char *name = fuzz_cstr(data + 2, nlen);
    program p = {data + 2 + nlen, size - 2 - nlen, name};
    tt_manual_seed(1);
    tt_tensor *in[2] = {tt_randn(TT_SHAPE(2, 3), TT_F32), tt_randn(TT_SHAPE(3), TT_F32)};
    FUZZ_CHECK(in[0] && in[1], "inputs: %s", tt_errmsg());

    tt_trace_opts opts = {.mode = (tt_trace_mode)(data[0] % 3), .fullgraph = true, .ud = &p,
                          .name = name};
    tt_clear_error();
    tt_graph *g = tt_trace(run_program, 2, in, &opts);
    if (g) {
        FUZZ_CHECK(tt_graph_verify(g) == TT_OK, "graph: %s", tt_errmsg());
        char *text = tt_graph_to_text(g);
        FUZZ_CHECK(text, "no text: %s", tt_errmsg());
        free(text);
        check_dot(tt_graph_to_dot(g), "graph");
        tt_graph_free(g);
    } else {
        FUZZ_CHECK(tt_errcode() != TT_OK, "the trace failed with no error");
    }
    if (data[0] & 4) {
        opts.mode = TT_TRACE_REAL;
        opts.fullgraph = false;
        tt_clear_error();
        tt_explain *e = tt_explain_run(run_program, 2, in, &opts);
        if (e) {
            for (int i = 0; i < tt_explain_graph_count(e); i++)
                FUZZ_CHECK(tt_graph_verify(tt_explain_graph(e, i)) == TT_OK,
                           "explain graph %d: %s", i, tt_errmsg());
            free(tt_explain_to_text(e));
            check_dot(tt_explain_to_dot(e), "explain");
            tt_explain_free(e);
        } else {
            FUZZ_CHECK(tt_errcode() != TT_OK, "explain failed with no error");
        }
    }
    tt_release(in[0]);
    tt_release(in[1]);
    free(name);
    tt_sym_reset();
    FUZZ_CHECK(tt_live_tensors() == 0, "%lld tensors leaked", (long long)tt_live_tensors());
    return 0;
}
