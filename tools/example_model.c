/* libttexample.so: the example model library of `tt` (README, "The tt
 * command-line tool"). Models written in plain C against tensortrace and
 * exported with the traced-function signature
 *
 *   tt_status fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
 *
 * so `tt trace --lib libttexample.so --fn mlp_forward ...` can load and
 * trace them. tt_model_init registers the tutorial's custom ops
 * (tools/tutorial_ops.c), which the crop pipelines call; tt_model_fini
 * removes them before tt unloads the library. scale_by_calls is a planted
 * bug for tt diff. The table tt_model_fns at the end declares them all.
 */
#include "tutorial_ops.h"

static tt_library *mylib; /* what tt_model_init registered */

/* Called by tt once after loading. A second call (or a second tool
 * calling it in the same process) does nothing: "mylib" can be defined
 * only once. */
tt_status tt_model_init(void)
{
    if (mylib)
        return TT_OK;
    return tutorial_ops_register(&mylib);
}

/* Called by tt before unloading: the ops' kernels live in this library. */
void tt_model_fini(void)
{
    mylib = tt_library_free(mylib);
}

static tt_status check_arity(const char *fn, int nin, int want_in, const char *names,
                             tt_tensor **out, int nout)
{
    if (nin != want_in)
        return tt_error(TT_EINVAL, "%s: expects %d input%s (%s), got %d", fn, want_in,
                        want_in == 1 ? "" : "s", names, nin);
    if (nout != 1 || !out)
        return tt_error(TT_EINVAL, "%s: writes 1 output, asked for %d", fn, nout);
    return TT_OK;
}

/* relu(x @ w + b), or NULL with the first error kept: each step is
 * checked, so a failure is reported by the op that failed rather than by
 * the next one receiving NULL. */
static tt_tensor *dense(const tt_tensor *x, const tt_tensor *w, const tt_tensor *b, bool relu)
{
    tt_tensor *xw = tt_matmul(x, w);
    tt_tensor *y = xw ? tt_add(xw, b) : NULL;
    return y && relu ? tt_relu(y) : y;
}

/* A three-layer perceptron on MNIST-sized inputs.
 * x is (B,784), w1 (784,512), b1 (512), w2 (512,256), b2 (256), w3 (256,10),
 * b3 (10); out is the logits (B,10). Relu between the layers. */
tt_status mlp_forward(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)ud;
    tt_status st = check_arity("mlp_forward", nin, 7, "x, w1, b1, w2, b2, w3, b3", out, nout);
    if (st)
        return st;
    tt_scope_begin(); /* the intermediates go with the scope */
    tt_tensor *h1 = dense(in[0], in[1], in[2], true);
    tt_tensor *h2 = h1 ? dense(h1, in[3], in[4], true) : NULL;
    tt_tensor *logits = h2 ? dense(h2, in[5], in[6], false) : NULL;
    out[0] = logits ? tt_keep(logits) : NULL;
    tt_scope_end();
    return out[0] ? TT_OK : tt_errcode();
}

static const int64_t box[4] = {0, 0, 10, 10}; /* (x0, y0, x1, y1) */

/* img is (3,H,W) with H, W >= 10; out = sin(crop(img, box)) is (3,10,10).
 * mylib::crop has a fake kernel, so this traces into one graph with one
 * opaque mylib::crop node, fullgraph or not. */
tt_status crop_pipeline(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)ud;
    tt_status st = check_arity("crop_pipeline", nin, 1, "img", out, nout);
    if (st)
        return st;
    const tt_op *crop = tt_op_find("mylib::crop");
    if (!crop)
        return tt_error(TT_ENOTFOUND, "crop_pipeline: mylib::crop is not registered (call "
                                      "tt_model_init first)");
    tt_tensor *c = tt_call(crop, tt_v_tensor(in[0]), tt_v_ints(4, box));
    out[0] = c ? tt_sin(c) : NULL;
    tt_release(c);
    return out[0] ? TT_OK : tt_errcode();
}

/* The same pipeline with crop as a plain C function that reads the pixels:
 * a graph break. A fullgraph trace fails naming the line that reads them;
 * tt explain shows two graphs split there. */
tt_status crop_plain_pipeline(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)ud;
    tt_tensor *c = NULL;
    tt_status st = check_arity("crop_plain_pipeline", nin, 1, "img", out, nout);
    if (!st)
        st = tutorial_crop_plain(in[0], box, &c);
    if (st)
        return st;
    out[0] = tt_sin(c);
    tt_release(c);
    return out[0] ? TT_OK : tt_errcode();
}

/* The tutorial's f(x): out = empty_like(x); numpy_sin(x, out); return out.
 * numpy_sin is a mutable op: the graph records the write into out. */
tt_status numpy_sin_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)ud;
    tt_status st = check_arity("numpy_sin_fn", nin, 1, "x", out, nout);
    if (st)
        return st;
    const tt_op *numpy_sin = tt_op_find("mylib::numpy_sin");
    if (!numpy_sin)
        return tt_error(TT_ENOTFOUND, "numpy_sin_fn: mylib::numpy_sin is not registered "
                                      "(call tt_model_init first)");
    tt_tensor *y = tt_empty_like(in[0]);
    if (!y)
        return tt_errcode();
    tt_value args[2] = {tt_v_tensor(in[0]), tt_v_tensor(y)};
    st = tt_op_call(numpy_sin, args, 2, NULL, 0);
    if (st) {
        tt_release(y);
        return st;
    }
    out[0] = y;
    return TT_OK;
}

/* The bisector's demo (tt diff): a bug the trace cannot see. The scale is
 * a C global that each call changes, so eagerly every call scales by its
 * own count while the trace records the count of the call that traced it
 * as a constant: the compiled result differs whatever the passes do. Do
 * not write models like this; it is here so tt diff has something to find. */
static int calls_so_far;

tt_status scale_by_calls(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)ud;
    tt_status st = check_arity("scale_by_calls", nin, 1, "x", out, nout);
    if (st)
        return st;
    out[0] = tt_mul_scalar(in[0], ++calls_so_far);
    return out[0] ? TT_OK : tt_errcode();
}

/* The model functions tt may trace (tt_model.h): `tt list
 * libttexample.so` prints this table, and --fn accepts only its names. */
const tt_model_fn tt_model_fns[] = {
    {"mlp_forward", mlp_forward, 7, 1,
     "logits of a three-layer perceptron, relu(relu(x@w1+b1)@w2+b2)@w3+b3",
     "x, w1, b1, w2, b2, w3, b3"},
    {"crop_pipeline", crop_pipeline, 1, 1,
     "sin(mylib::crop(img, [0, 0, 10, 10])): the custom op traces as one node", "img"},
    {"crop_plain_pipeline", crop_plain_pipeline, 1, 1,
     "the same with crop as plain C reading the pixels: a graph break", "img"},
    {"numpy_sin_fn", numpy_sin_fn, 1, 1,
     "out = empty_like(x); mylib::numpy_sin(x, out): a mutable custom op", "x"},
    {"scale_by_calls", scale_by_calls, 1, 1,
     "x * (the number of calls so far): a C global the trace freezes (tt diff's demo)", "x"},
    {0},
};
