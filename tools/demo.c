/* tt-demo: PyTorch's "Python custom operators" tutorial, in C
 * (`tools/run demo`).
 *
 * The story: a photograph (Grace Hopper's portrait, which Debian ships
 * with matplotlib's sample data, read with libjpeg; a synthetic picture
 * when it is not installed); `crop` as a plain C function, which a fullgraph
 * compile cannot trace through (a graph break, reported with its line);
 * `crop` as a custom op with a fake kernel, which traces into one opaque
 * node; its gradient through a second op, `paste`; `numpy_sin`, a mutable
 * op writing into an output buffer; opcheck over the tutorial's examples,
 * and on a broken op. Each step prints a line saying what it shows, then
 * what happened, and checks it; pictures (PNG, DOT, SVG) go to the output
 * folder. The program exits 0 only when every check holds, so the demo
 * doubles as a smoke test of the whole stack. The ops are in
 * tutorial_ops.c, shared with the `tt` tool's example library.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "jpeg.h"
#include "png.h"
#include "tensortrace.h"
#include "tutorial_ops.h"

/* graphviz leaks inside its layout whatever the caller does. */
#include "lsan_graphviz.h"

/* The photograph: matplotlib's sample portrait (python-matplotlib-data,
 * 512x600), as PyTorch's tutorial crops a photograph. */
static const char *photo_path = "/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg";
static bool photo_given; /* --photo: a missing file is then an error */

/* (x0, y0, x1, y1): a 288x288 box around the face; it also fits the
 * synthetic picture (SYNTH x SYNTH) used when there is no photograph. */
static const int64_t BOX[4] = {112, 64, 400, 352};
enum { SYNTH = 512 };

static const char *out_dir = "demo-out";
static int nchecks, nfailed;
static const tt_op *crop_op, *sin_op, *nopermute_op;

/* ================================================================ output */

static void step(int n, const char *title, const char *why)
{
    printf("\n== %d. %s\n   %s\n", n, title, why);
}

/* Counts a check and prints it; the demo goes on after a failure, so one
 * run shows every difference. */
static bool check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool check(bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("   %s ", ok ? "[ok]" : "[FAILED]");
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    nchecks++;
    nfailed += !ok;
    return ok;
}

/* A call that should have worked did not: a failed check with the
 * library's message. Returns false so callers can `if (!call_ok(...))`. */
static bool call_ok(bool ok, const char *what)
{
    if (ok)
        return true;
    return check(false, "%s: %s: %s", what, tt_status_name(tt_errcode()), tt_errmsg());
}

/* Indents every line of text by `indent` spaces. */
static void print_indented(const char *text, int indent)
{
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        printf("%*s%.*s\n", indent, "", len, p);
        p += len + (nl != NULL);
    }
}

static const char *out_path(const char *name)
{
    static char buf[4][4096];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", out_dir, name);
    return buf[k];
}

/* mkdir -p: the folder and its missing parents. */
static bool make_dir(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return false;
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p)
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "tt-demo: cannot create %s: %s\n", buf, strerror(errno));
            return false;
        }
        *p = c;
        if (!c)
            break;
    }
    struct stat s;
    if (stat(path, &s) != 0 || !S_ISDIR(s.st_mode)) {
        fprintf(stderr, "tt-demo: %s is not a folder\n", path);
        return false;
    }
    return true;
}

static long file_size(const char *path)
{
    struct stat s;
    return stat(path, &s) == 0 ? (long)s.st_size : -1;
}

static void write_png(const tt_tensor *img, const char *name, const char *what)
{
    const char *path = out_path(name);
    if (call_ok(image_write_png(img, path) == TT_OK, "image_write_png"))
        check(file_size(path) > 0, "wrote %s (%s)", path, what);
}

/* ================================================================ values */

/* t's elements in logical order as doubles (caller frees), or NULL. */
static double *values(const tt_tensor *t)
{
    int64_t n = tt_numel(t);
    tt_no_grad_begin(); /* reading values is not part of any computation */
    tt_tensor *d = tt_to_dtype(t, TT_F64);
    tt_no_grad_end();
    double *v = d ? malloc(sizeof(double) * (size_t)(n ? n : 1)) : NULL;
    if (v && tt_to_buffer(d, v, sizeof(double) * (size_t)n)) {
        free(v);
        v = NULL;
    }
    tt_release(d);
    return v;
}

/* max |a - b| over equal shapes; INFINITY when the shapes differ or the
 * values cannot be read. */
static double max_diff(const tt_tensor *a, const tt_tensor *b)
{
    if (!a || !b || tt_ndim(a) != tt_ndim(b) ||
        memcmp(tt_sizes(a), tt_sizes(b), sizeof(tt_size) * (size_t)tt_ndim(a)) != 0)
        return INFINITY;
    double *va = values(a), *vb = values(b), m = va && vb ? 0 : INFINITY;
    for (int64_t i = 0; va && vb && i < tt_numel(a); i++)
        m = fmax(m, fabs(va[i] - vb[i]));
    free(va);
    free(vb);
    return m;
}

static const char *describe(const tt_tensor *t)
{
    static char buf[2][256];
    static int k;
    char d[128], s[128];
    k = !k;
    snprintf(buf[k], sizeof buf[k], "%s, strides %s", tt_describe(t, d, sizeof d),
             tt_strides_str(t, s, sizeof s));
    return buf[k];
}

static int count_op_nodes(const tt_graph *g)
{
    int n = 0;
    for (int i = 0; i < tt_graph_num_nodes(g); i++)
        n += tt_graph_node_kind(g, i) == TT_NODE_OP;
    return n;
}

/* ============================================================= the steps */

/* The picture when there is no photograph, 3xSYNTHxSYNTH f32: outer
 * products of linspace(0, 1), one gradient per channel: red y*x, green
 * (1-y)*x, blue y*(1-x). */
static tt_tensor *make_image(void)
{
    tt_tensor *img = tt_empty(TT_SHAPE(3, SYNTH, SYNTH), TT_F32);
    tt_status st = img ? TT_OK : tt_errcode();
    tt_scope_begin();
    tt_tensor *r = tt_linspace(0, 1, SYNTH, TT_F32);
    tt_tensor *y = tt_view(r, TT_SHAPE(SYNTH, 1)), *x = tt_view(r, TT_SHAPE(1, SYNTH));
    tt_tensor *ny = tt_add_scalar(tt_neg(y), 1), *nx = tt_add_scalar(tt_neg(x), 1);
    tt_tensor *ch[3] = {tt_mul(y, x), tt_mul(ny, x), tt_mul(y, nx)};
    for (int c = 0; c < 3 && !st; c++) /* a NULL anywhere above fails here */
        st = tt_copy_(tt_select(img, 0, c), ch[c]);
    tt_scope_end();
    if (st) {
        call_ok(false, "making the image");
        img = tt_release(img);
    }
    return img;
}

static bool file_exists(const char *path)
{
    struct stat s;
    return stat(path, &s) == 0;
}

static tt_tensor *step_image(void)
{
    tt_tensor *img;
    if (photo_given || file_exists(photo_path)) {
        step(1, "The photograph, read with libjpeg",
             "As pil_to_tensor gives it: (3, H, W) viewed over an (H, W, 3) buffer.");
        printf("   %s\n", photo_path);
        img = image_read_jpeg(photo_path);
        if (!call_ok(img != NULL, "image_read_jpeg"))
            return NULL;
        printf("   img: %s\n", describe(img));
        int64_t h = tt_dim_size(img, 1), w = tt_dim_size(img, 2);
        check(tt_dim_size(img, 0) == 3 && h >= BOX[3] && w >= BOX[2] && h >= 256 && w >= 256,
              "an RGB picture of %lldx%lld pixels, large enough for the box", (long long)w,
              (long long)h);
        write_png(img, "image.png", "the photograph");
        return img;
    }
    step(1, "No photograph installed: a synthetic picture, linspace x linspace",
         "red = y*x, green = (1-y)*x, blue = y*(1-x): a gradient per channel.");
    printf("   (%s is absent: tools/run installs it with python-matplotlib-data)\n",
           photo_path);
    img = make_image();
    if (!img)
        return NULL;
    printf("   img: %s\n", describe(img));
    double corner[3] = {0};
    for (int c = 0; c < 3; c++)
        tt_get(img, &corner[c], c, SYNTH - 1, 0);
    check(corner[0] == 0 && corner[1] == 0 && corner[2] == 1,
          "bottom-left pixel is blue: (%g, %g, %g)", corner[0], corner[1], corner[2]);
    write_png(img, "image.png", "the synthetic picture");
    return img;
}

/* The tutorial's view of img[:, y0:y1, x0:x1]: what every crop must equal. */
static tt_tensor *expected_crop(const tt_tensor *img)
{
    tt_tensor *rows = tt_narrow(img, 1, BOX[1], BOX[3] - BOX[1]);
    tt_tensor *want = rows ? tt_narrow(rows, 2, BOX[0], BOX[2] - BOX[0]) : NULL;
    tt_release(rows);
    return want;
}

/* "img[:, 40:328, 112:400]", what every crop must equal. */
static const char *box_slice(void)
{
    static char buf[96];
    snprintf(buf, sizeof buf, "img[:, %lld:%lld, %lld:%lld]", (long long)BOX[1],
             (long long)BOX[3], (long long)BOX[0], (long long)BOX[2]);
    return buf;
}

static void step_plain_crop(const tt_tensor *img)
{
    step(2, "crop as a plain C function (tutorial_crop_plain)",
         "It reads the pixels with tt_data and copies rows, as PIL's Image.crop would.");
    tt_tensor *out = NULL, *want = expected_crop(img);
    if (call_ok(tutorial_crop_plain(img, BOX, &out) == TT_OK, "tutorial_crop_plain")) {
        printf("   crop(img, (%lld, %lld, %lld, %lld)): %s (channels-last, as pil_to_tensor)\n",
               (long long)BOX[0], (long long)BOX[1], (long long)BOX[2], (long long)BOX[3],
               describe(out));
        check(max_diff(out, want) == 0, "equals %s", box_slice());
        write_png(out, "crop.png", "the crop");
    }
    tt_release(want);
    tt_release(out);
}

static tt_status plain_crop_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    return tutorial_crop_plain(in[0], BOX, &out[0]);
}

static void step_graph_break(tt_tensor *img)
{
    step(3, "A fullgraph compile of the plain crop fails: a graph break",
         "The tracer runs on fake tensors (no pixels); reading pixels cannot be traced.");
    tt_compiled *c = tt_compile(plain_crop_fn, 1, 1,
                                &(tt_trace_opts){.fullgraph = true, .name = "crop_plain"});
    tt_tensor *out = NULL;
    tt_status st = c ? tt_compiled_call(c, &img, &out) : tt_errcode();
    printf("   tt_compiled_call: %s\n", tt_status_name(st));
    print_indented(tt_errmsg(), 5);
    check(st == TT_EGRAPHBREAK && strstr(tt_errmsg(), "tutorial_ops.c:") != NULL,
          "TT_EGRAPHBREAK, naming the line in tools/tutorial_ops.c");
    tt_release(out);
    tt_compiled_free(c);
    tt_clear_error();

    /* Without fullgraph, explain runs the function (eagerly past the break)
     * and lists each break as torch._dynamo.explain does. */
    printf("   Without fullgraph, tt_explain_run splits the trace at the break:\n");
    tt_explain *e = tt_explain_run(plain_crop_fn, 1, &img, &(tt_trace_opts){.name = "crop_plain"});
    if (call_ok(e != NULL, "tt_explain_run")) {
        const tt_break_info *b = tt_explain_break_count(e) > 0 ? tt_explain_break(e, 0) : NULL;
        if (check(b && tt_explain_break_count(e) == 1 && tt_explain_graph_count(e) == 2,
                  "explain: %d break, %d graphs (before and after the pixel read)",
                  tt_explain_break_count(e), tt_explain_graph_count(e)))
            printf("   first break: kind '%s', reason: %s\n     at %s:%d in %s()\n",
                   tt_break_kind_name(b->kind), b->reason, b->loc.file, b->loc.line,
                   b->loc.func);
        if (b)
            check(b->kind == TT_BREAK_DATA_READ &&
                      strcmp(b->loc.func, "tutorial_crop_plain") == 0,
                  "a data read in tutorial_crop_plain");
    }
    tt_explain_free(e);
}

static tt_status crop_op_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_call(crop_op, tt_v_tensor(in[0]), tt_v_ints(4, BOX));
    return out[0] ? TT_OK : tt_errcode();
}

static void write_graph_files(const tt_graph *g)
{
    const char *dot = out_path("graph.dot"), *svg = out_path("graph.svg");
    FILE *f = fopen(dot, "w");
    if (!f) {
        check(false, "cannot open %s: %s", dot, strerror(errno));
    } else {
        tt_status st = tt_graph_write_dot(g, f);
        bool closed = fclose(f) == 0;
        if (call_ok(st == TT_OK, "tt_graph_write_dot"))
            check(closed && file_size(dot) > 0, "wrote %s (the graph in DOT)", dot);
    }
    if (call_ok(tt_graph_render(g, "svg", svg) == TT_OK, "tt_graph_render"))
        check(file_size(svg) > 0, "wrote %s (rendered by graphviz)", svg);
}

static void step_crop_op(tt_tensor *img)
{
    step(4, "crop as a custom op, mylib::crop, with a fake kernel: no break",
         "The fake kernel gives the output's metadata from the input's: "
         "new_empty(h, w, c).permute(2, 0, 1).");
    tt_compiled *c = tt_compile(crop_op_fn, 1, 1,
                                &(tt_trace_opts){.fullgraph = true, .name = "crop"});
    tt_tensor *out = NULL, *want = expected_crop(img);
    if (!call_ok(c && tt_compiled_call(c, &img, &out) == TT_OK, "compiling mylib::crop"))
        goto out;
    const tt_graph *g = tt_compiled_graph(c, 0);
    if (!call_ok(g != NULL, "tt_compiled_graph"))
        goto out;
    printf("   the traced graph:\n");
    char *text = tt_graph_to_text(g);
    if (call_ok(text != NULL, "tt_graph_to_text"))
        print_indented(text, 5);
    free(text);
    check(tt_graph_count_op(g, "mylib::crop") == 1 && count_op_nodes(g) == 1,
          "one op node, the opaque mylib::crop");
    printf("   compiled crop(img): %s\n", describe(out));
    check(max_diff(out, want) == 0, "the compiled crop equals %s", box_slice());
    write_graph_files(g);
out:
    tt_release(want);
    tt_release(out);
    tt_compiled_free(c);
}

static void step_grad(const tt_tensor *img)
{
    step(5, "The gradient of sum(crop(img)^2) / 2 with respect to img",
         "crop's backward pastes the incoming gradient, crop(img) itself, into zeros "
         "(mylib::paste): the crop back in its place, black around it.");
    tt_tensor *leaf = tt_clone(img), *out = NULL, *loss = NULL, *g = NULL, *want = NULL;
    if (!call_ok(leaf && tt_set_requires_grad(leaf, true) == TT_OK, "a leaf that requires grad"))
        goto out;
    out = tt_call(crop_op, tt_v_tensor(leaf), tt_v_ints(4, BOX));
    if (!call_ok(out != NULL, "mylib::crop"))
        goto out;
    printf("   crop(img).grad_fn: %s\n", tt_grad_fn_name(out));
    tt_scope_begin();
    loss = tt_keep(tt_mul_scalar(tt_sum_all(tt_mul(out, out)), 0.5));
    tt_scope_end();
    if (!call_ok(loss != NULL, "sum(crop(img)^2) / 2") ||
        !call_ok(tt_backward(loss, NULL) == TT_OK, "tt_backward"))
        goto out;
    g = tt_get_grad(leaf);
    if (!call_ok(g != NULL, "img.grad"))
        goto out;
    printf("   img.grad: %s\n", describe(g));
    /* What it must be: zeros, with img's pixels in the box. */
    want = tt_zeros(tt_ndim(img), tt_sizes(img), tt_dtype_of(img));
    tt_tensor *region = want ? tt_narrow(want, 1, BOX[1], BOX[3] - BOX[1]) : NULL;
    tt_tensor *box = region ? tt_narrow(region, 2, BOX[0], BOX[2] - BOX[0]) : NULL;
    tt_tensor *src = expected_crop(img);
    bool made = box && src && tt_copy_(box, src) == TT_OK;
    tt_release(src);
    tt_release(box);
    tt_release(region);
    if (call_ok(made, "the expected gradient"))
        check(max_diff(g, want) == 0, "img's pixels in the %lldx%lld box, zeros elsewhere",
              (long long)(BOX[2] - BOX[0]), (long long)(BOX[3] - BOX[1]));
    write_png(g, "grad.png", "the gradient: the crop in its place, black around it");
out:
    tt_release(want);
    tt_release(g);
    tt_release(loss);
    tt_release(out);
    tt_release(leaf);
}

/* The tutorial's f(x): out = empty(3); numpy_sin(x, out); return out. */
static tt_status sin_fn(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    tt_tensor *o = tt_empty(tt_ndim(in[0]), tt_sizes(in[0]), tt_dtype_of(in[0]));
    if (!o)
        return tt_errcode();
    tt_value none = tt_v_none();
    tt_status st = tt_op_call(sin_op, (tt_value[]){tt_v_tensor(in[0]), tt_v_tensor(o)}, 2,
                              &none, 0);
    if (st) {
        tt_release(o);
        return st;
    }
    out[0] = o;
    return TT_OK;
}

static void step_numpy_sin(void)
{
    step(6, "numpy_sin, a mutable op: writes sin(input) into its output argument",
         "No fake kernel needed (it returns nothing); the graph marks the write.");
    tt_compiled *c = tt_compile(sin_fn, 1, 1,
                                &(tt_trace_opts){.fullgraph = true, .name = "f"});
    tt_tensor *x = tt_randn(TT_SHAPE(3), TT_F32), *y = NULL, *want = NULL;
    tt_tensor *x2 = tt_randn(TT_SHAPE(3), TT_F32), *y2 = NULL, *want2 = NULL;
    if (!call_ok(c && x && x2, "tt_compile") ||
        !call_ok(tt_compiled_call(c, &x, &y) == TT_OK, "compiled f(x)"))
        goto out;
    const tt_graph *g = tt_compiled_graph(c, 0);
    char *text = g ? tt_graph_to_text(g) : NULL;
    if (call_ok(text != NULL, "the graph of f")) {
        printf("   the traced graph of f:\n");
        print_indented(text, 5);
    }
    free(text);
    check(g && tt_graph_count_op(g, "mylib::numpy_sin") == 1,
          "one mylib::numpy_sin node, traced with fullgraph");
    want = tt_sin(x);
    double d = max_diff(y, want);
    check(d <= 1e-6, "f(x) == sin(x): max |difference| %g", d);
    /* A second input of the same signature replays the cached plan. */
    if (call_ok(tt_compiled_call(c, &x2, &y2) == TT_OK, "compiled f(x2)")) {
        tt_compile_stats s;
        tt_compiled_stats(c, &s);
        want2 = tt_sin(x2);
        d = max_diff(y2, want2);
        check(d <= 1e-6 && s.hits == 1 && s.misses == 1,
              "f(x2) replays the plan (%lld hit, %lld miss): max |difference| %g",
              (long long)s.hits, (long long)s.misses, d);
    }
out:
    tt_release(want2);
    tt_release(y2);
    tt_release(x2);
    tt_release(want);
    tt_release(y);
    tt_release(x);
    tt_compiled_free(c);
}

/* One opcheck example: an op and its arguments. Tensors are made from the
 * description, so the table reads like the tutorial's Python lists. */
typedef struct {
    const tt_op **op;
    int64_t sizes[2][4];
    int ndim[2];
    tt_dtype dtype;
    bool requires_grad;
    bool is_sin;         /* [randn(sizes), empty(sizes)] instead of [randn, box] */
    int64_t box[4];
} example;

static void run_opcheck(const example *ex, bool expect_pass, tt_opcheck_report *rep,
                        tt_status *status)
{
    tt_tensor *a = tt_randn(ex->ndim[0], ex->sizes[0], ex->dtype), *b = NULL;
    tt_value args[2];
    *status = TT_EINTERNAL;
    memset(rep, 0, sizeof *rep);
    if (!call_ok(a != NULL, "tt_randn"))
        return;
    if (ex->requires_grad && !call_ok(tt_set_requires_grad(a, true) == TT_OK, "requires_grad"))
        goto out;
    args[0] = tt_v_tensor(a);
    if (ex->is_sin) {
        b = tt_empty(ex->ndim[1], ex->sizes[1], ex->dtype);
        if (!call_ok(b != NULL, "tt_empty"))
            goto out;
        args[1] = tt_v_tensor(b);
    } else {
        args[1] = tt_v_ints(4, ex->box);
    }
    char what[160], shape[64];
    int len = snprintf(what, sizeof what, "[randn(%s) %s%s, ", tt_shape_str(a, shape, sizeof shape),
                       tt_dtype_name(ex->dtype), ex->requires_grad ? " requires_grad" : "");
    if (ex->is_sin)
        snprintf(what + len, sizeof what - (size_t)len, "empty(%s)]",
                 tt_shape_str(b, shape, sizeof shape));
    else
        snprintf(what + len, sizeof what - (size_t)len, "[%lld, %lld, %lld, %lld]]",
                 (long long)ex->box[0], (long long)ex->box[1], (long long)ex->box[2],
                 (long long)ex->box[3]);
    printf("\n   opcheck(%s, %s)\n", tt_op_name(*ex->op), what);
    *status = tt_opcheck(*ex->op, args, 2, NULL, rep);
    char *text = tt_opcheck_report_to_text(rep);
    if (text)
        print_indented(text, 5);
    free(text);
    if (expect_pass)
        check(*status == TT_OK, "opcheck %s: %s", tt_op_name(*ex->op),
              *status == TT_OK ? "every check passed" : tt_errmsg());
out:
    tt_release(b);
    tt_release(a);
}

static void step_opcheck(void)
{
    step(7, "opcheck over the tutorial's examples",
         "schema (mutation, aliasing), autograd registration, fake kernel vs real kernel, "
         "and a symbolic trace replayed against eager.");
    static const example examples[] = {
        {&crop_op, {{3, 64, 64}}, {3, 0}, TT_F32, false, false, {0, 0, 10, 10}},
        {&crop_op, {{3, 91, 91}}, {3, 0}, TT_F32, true, false, {10, 0, 20, 10}},
        {&crop_op, {{3, 60, 60}}, {3, 0}, TT_F64, false, false, {3, 4, 32, 20}},
        {&crop_op, {{3, 512, 512}}, {3, 0}, TT_F64, true, false, {3, 4, 32, 45}},
        {&sin_op, {{3}, {3}}, {1, 1}, TT_F32, false, true, {0}},
        {&sin_op, {{0, 3}, {0, 3}}, {2, 2}, TT_F32, false, true, {0}},
        {&sin_op, {{1, 2, 3, 4}, {1, 2, 3, 4}}, {4, 4}, TT_F64, false, true, {0}},
    };
    tt_opcheck_report rep;
    tt_status st;
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++)
        run_opcheck(&examples[i], true, &rep, &st);

    printf("\n   Now a broken op: mylib::crop_nopermute has crop's kernel, but its fake\n"
           "   kernel returns new_empty(c, h, w) without the permute (wrong strides):\n");
    const example broken = {&nopermute_op, {{3, 64, 64}}, {3, 0}, TT_F32, false, false,
                            {0, 0, 10, 10}};
    run_opcheck(&broken, false, &rep, &st);
    bool fake_failed = false, others_ok = true;
    for (int k = 0; k < TT_OPCHECK_NCHECKS; k++) {
        if (rep.entries[k].check && strcmp(rep.entries[k].check, "faketensor") == 0)
            fake_failed = rep.entries[k].result == TT_CHECK_FAILED;
        else
            others_ok &= rep.entries[k].result != TT_CHECK_FAILED;
    }
    check(st == TT_EOPCHECK && fake_failed && others_ok,
          "opcheck fails it (%s), on the faketensor check alone", tt_status_name(st));
    tt_clear_error();
}

/* ================================================================= main */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tt-demo [--out DIR] [--photo FILE.jpg]\n"
            "\n"
            "PyTorch's custom-ops tutorial, in C: a photograph, crop as plain C (a graph\n"
            "break) and as a custom op with a fake kernel (one opaque node), its\n"
            "gradient through paste, numpy_sin as a mutable op, and opcheck.\n"
            "Writes image.png, crop.png, grad.png, graph.dot and graph.svg.\n"
            "Exits 0 only when every check passes.\n"
            "\n"
            "  --out DIR   where to write the files (default: demo-out, created)\n"
            "  --photo F   the JPEG to crop (default: matplotlib's sample portrait,\n"
            "              %s;\n"
            "              a synthetic picture when that is not installed)\n"
            "  --help      this text\n",
            photo_path);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc && argv[i + 1][0]) {
            out_dir = argv[++i];
        } else if (strncmp(argv[i], "--out=", 6) == 0 && argv[i][6]) {
            out_dir = argv[i] + 6;
        } else if (strcmp(argv[i], "--photo") == 0 && i + 1 < argc && argv[i + 1][0]) {
            photo_path = argv[++i];
            photo_given = true;
        } else {
            fprintf(stderr, "tt-demo: %s '%s'\n",
                    strcmp(argv[i], "--out") == 0     ? "missing folder after"
                    : strcmp(argv[i], "--photo") == 0 ? "missing file after"
                                                      : "unknown argument",
                    argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!make_dir(out_dir))
        return 1;
    /* Said in full, as tools/run may have been started from anywhere. */
    char *full = realpath(out_dir, NULL);
    if (full)
        out_dir = full;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tt_manual_seed(0);

    printf("tensortrace: PyTorch's custom-ops tutorial, in C\n"
           "writing pictures to %s/\n", out_dir);
    tt_library *lib = NULL;
    if (tutorial_ops_register(&lib) != TT_OK) {
        printf("tt-demo: cannot register the tutorial's ops: %s\n", tt_errmsg());
        free(full);
        return 1;
    }
    crop_op = tt_op_find("mylib::crop");
    sin_op = tt_op_find("mylib::numpy_sin");
    nopermute_op = tt_op_find("mylib::crop_nopermute");
    printf("registered mylib::crop, mylib::paste, mylib::numpy_sin, mylib::crop_nopermute\n");

    tt_tensor *img = step_image();
    if (img) {
        step_plain_crop(img);
        step_graph_break(img);
        step_crop_op(img);
        step_grad(img);
    }
    step_numpy_sin();
    step_opcheck();
    tt_release(img);
    lib = tt_library_free(lib);

    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("\n== done in %.1f s\n", (double)(t1.tv_sec - t0.tv_sec) +
                                       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    check(tt_live_tensors() == 0, "every tensor released (%lld live)",
          (long long)tt_live_tensors());
    printf("   files: %s/{image.png, crop.png, grad.png, graph.dot, graph.svg}\n", out_dir);
    free(full);
    if (nfailed) {
        printf("demo: %d of %d checks FAILED\n", nfailed, nchecks);
        return 1;
    }
    printf("demo: all %d checks passed\n", nchecks);
    return 0;
}
