/* A data read breaks the graph: what explain shows, and what fullgraph
 * says.
 *
 * The model scales x by its largest magnitude, and reads that number into
 * a C double with tt_item, as C code naturally would. A tracer records
 * ops; it cannot record what C does with a number, so the read is a graph
 * break, like `.item()` under torch.compile:
 *
 *   - tt_explain_run runs the model on real inputs and splits the trace at
 *     the read: two graphs, the C code between them run eagerly; it
 *     reports the break's reason and this file's line;
 *   - a fullgraph trace fails at the read, naming the line, with a hint;
 *   - tt_compile without fullgraph still gives the eager result.
 *
 * Build: cc graph_break.c $(pkg-config --cflags --libs tensortrace) -o graph_break
 * Exits 0 when all three behave so. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <tensortrace.h>

/* x is any shape; out = sin(x) / max|x|. */
static tt_status scale_by_peak(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    double peak = 1;
    tt_scope_begin(); /* releases the intermediates */
    tt_tensor *m = tt_amax(tt_abs(in[0]), 0, NULL, false); /* over all dims: 0-dim */
    /* The data read. Checked, as every read should be: in a fullgraph or
     * fake trace there may be no data, and the status says so. */
    tt_status st = m ? tt_item(m, &peak) : tt_errcode();
    if (!st) {
        out[0] = tt_keep(tt_div_scalar(tt_sin(in[0]), peak != 0 ? peak : 1));
        st = out[0] ? TT_OK : tt_errcode();
    }
    tt_scope_end();
    return st;
}

int main(void)
{
    int rc = 1;
    tt_tensor *x = tt_randn(TT_SHAPE(4, 5), TT_F32), *eager = NULL, *compiled_out = NULL;
    tt_explain *e = NULL;
    tt_compiled *c = NULL;
    char *text = NULL;
    if (!x || scale_by_peak(&x, 1, &eager, 1, NULL))
        goto out;

    /* explain: two graphs and the break between them, with its line. */
    e = tt_explain_run(scale_by_peak, 1, &x, &(tt_trace_opts){.name = "scale_by_peak"});
    text = e ? tt_explain_to_text(e) : NULL;
    if (!text)
        goto out;
    fputs(text, stdout);
    if (tt_explain_graph_count(e) != 2 || tt_explain_break(e, 0)->kind != TT_BREAK_DATA_READ)
        goto out;

    /* fullgraph: the trace fails at the break, and says where and why. */
    tt_graph *g = tt_trace(scale_by_peak, 1, &x, &(tt_trace_opts){.fullgraph = true});
    if (g) {
        tt_graph_free(g);
        fprintf(stderr, "graph_break: a fullgraph trace went through a data read\n");
        goto out;
    }
    printf("\nfullgraph: %s: %s\n", tt_status_name(tt_errcode()), tt_errmsg());

    /* compile without fullgraph: the function runs eagerly, so the result
     * is the eager one. */
    c = tt_compile(scale_by_peak, 1, 1, NULL);
    if (!c || tt_compiled_call(c, &x, &compiled_out))
        goto out;
    double d = INFINITY;
    tt_scope_begin();
    tt_tensor *diff = tt_amax(tt_abs(tt_sub(compiled_out, eager)), 0, NULL, false);
    tt_status st = diff ? tt_item(diff, &d) : tt_errcode();
    tt_scope_end();
    if (st)
        goto out;
    printf("\ncompiled without fullgraph: max |compiled - eager| = %g\n", d);
    rc = d == 0 ? 0 : 1;
out:
    if (rc)
        fprintf(stderr, "graph_break: %s\n", tt_errmsg());
    free(text);
    tt_compiled_free(c);
    tt_explain_free(e);
    tt_release(compiled_out);
    tt_release(eager);
    tt_release(x);
    return rc || tt_live_tensors() != 0;
}
