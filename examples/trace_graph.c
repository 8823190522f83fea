/* Tracing a model: print its graph, write it as DOT and render it to SVG.
 *
 * The model is a two-layer perceptron written as plain C calls. Traced on
 * fake tensors (sizes, strides, dtype, no memory), it is recorded as a
 * graph without computing anything, so its size does not matter: here the
 * batch is 100,000 rows of 4096 features, 1.6 GB that are never allocated.
 *
 * Build: cc trace_graph.c $(pkg-config --cflags --libs tensortrace tensortrace-render) \
 *            -o trace_graph   (tt_graph_render is in libtensortrace-render)
 * Run:   ./trace_graph [DIR]   (writes DIR/mlp.dot and DIR/mlp.svg; DIR defaults to .) */
#include <stdio.h>
#include <tensortrace.h>

/* x is (B,K), w1 (K,H), b1 (H), w2 (H,C), b2 (C); out is softmax logits (B,C). */
static tt_status mlp(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_scope_begin();
    tt_tensor *h = tt_relu(tt_add(tt_matmul(in[0], in[1]), in[2]));
    tt_tensor *logits = tt_add(tt_matmul(h, in[3]), in[4]);
    out[0] = tt_keep(tt_softmax(logits, 1)); /* NULL when any call failed */
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    char dot_path[4096], svg_path[4096];
    snprintf(dot_path, sizeof dot_path, "%s/mlp.dot", dir);
    snprintf(svg_path, sizeof svg_path, "%s/mlp.svg", dir);

    /* Fake inputs: tt_fake_empty allocates no data. */
    tt_tensor *in[5] = {
        tt_fake_empty(TT_SHAPE(100000, 4096), TT_F32), tt_fake_empty(TT_SHAPE(4096, 256), TT_F32),
        tt_fake_empty(TT_SHAPE(256), TT_F32),          tt_fake_empty(TT_SHAPE(256, 10), TT_F32),
        tt_fake_empty(TT_SHAPE(10), TT_F32),
    };
    static const char *const names[] = {"x", "w1", "b1", "w2", "b2"};
    tt_graph *g = tt_trace(mlp, 5, in, &(tt_trace_opts){.name = "mlp", .input_names = names});
    int rc = 1;
    if (!g)
        goto out;
    /* The graph as text: one line per op with its output's dtype and shape
     * and, as a comment, the line of mlp that made it. */
    if (tt_graph_print(g, stdout))
        goto out;
    /* DOT text (deterministic), then an SVG picture through graphviz. */
    FILE *f = fopen(dot_path, "w");
    tt_status st = f ? tt_graph_write_dot(g, f) : TT_EINVAL;
    if (f && fclose(f) != 0 && !st)
        st = TT_EINVAL;
    if (st || tt_graph_render(g, "svg", svg_path))
        goto out;
    printf("wrote %s and %s\n", dot_path, svg_path);
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "trace_graph: %s\n", tt_errmsg());
    tt_graph_free(g);
    for (int i = 0; i < 5; i++)
        tt_release(in[i]);
    return rc || tt_live_tensors() != 0;
}
