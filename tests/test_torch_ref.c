/* The differential suite: replays tests/data/torch_ref.txt, PyTorch's
 * answers for calls of every built-in op (tools/gen_torch_ref.py writes it;
 * its header says the format), and checks that tensortrace agrees: the
 * error-or-not, the result's dtype, sizes and strides (dims of size 1 have
 * no meaningful stride and are not compared), its values, and the
 * gradient of sum(out * g) with respect to every input that requires grad.
 * Inputs are rebuilt from the file's closed forms, so no PyTorch is needed
 * here. Every disagreement is reported, then the test fails once with the
 * count. */
#include "tt_test.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 16
#define MAX_OUTS 8
#define MAX_TOKS 4096

typedef struct {
    char *buf;      /* the file */
    char *pos;      /* the next line */
    int failures;   /* disagreements so far */
    int cases;
} reader;

/* The next line, without its newline; NULL at the end. */
static char *next_line(reader *r)
{
    if (!r->pos || !*r->pos)
        return NULL;
    char *line = r->pos, *nl = strchr(line, '\n');
    if (nl) {
        *nl = 0;
        r->pos = nl + 1;
    } else {
        r->pos = NULL;
    }
    return line;
}


/* ------------------------------------------------------------ one case */

/* What one case holds: its arguments as tt_values (tensors owned here),
 * the leaves that require grad by argument index, and what PyTorch said. */
typedef struct {
    char name[128], op[96], err[512];
    tt_value args[MAX_ARGS];
    int nargs;
    tt_tensor *owned[32]; /* every tensor made for the arguments */
    int nowned;
    tt_tensor *bufs[MAX_ARGS]; /* each plain tensor argument's buffer, by index */
    tt_tensor *lists[MAX_ARGS][8]; /* tensor-list arguments */
    int64_t ints[MAX_ARGS][8];
    char strs[MAX_ARGS][32];
    tt_tensor *leaf_of[MAX_ARGS][8]; /* [arg][list item], or [arg][0] */
    bool bools[MAX_ARGS][8];
    double floats[MAX_ARGS][8]; /* float lists (FL) */
    bool meta;
    double tol; /* a case's own tolerance ("tol"), or 0 for the dtype's */
    /* out: one per result, in order (none for a None result); a Tensor[]
     * result ("list N") is its N elements' out lines, from list_at */
    int nouts;
    bool has_list;
    int list_at, list_n;
    struct {
        bool none;
        tt_dtype dt;
        int ndim;
        int64_t sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS];
        double *vals;
        int64_t nvals;
    } outs[MAX_OUTS];
    /* after: an argument's values after the call (a mutated argument) */
    int nafters;
    int after_arg[MAX_OUTS];
    double *after_vals[MAX_OUTS];
    int64_t after_n[MAX_OUTS];
    /* grads, in file order */
    int ngrads;
    char grad_idx[8][8];
    double *grads[8];
    int64_t ngradv[8];
    bool grad_none[8];
} ref_case;

static void disagree(reader *r, const ref_case *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void disagree(reader *r, const ref_case *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "torch_ref: %s (%s): ", c->name, c->op);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    r->failures++;
}

/* Splits s at blanks into toks; returns the count. */
static int split(char *s, char **toks, int max)
{
    int n = 0;
    for (char *t = strtok(s, " "); t && n < max; t = strtok(NULL, " "))
        toks[n++] = t;
    return n;
}

static tt_dtype dtype_named(const char *s)
{
    int d = tt_dtype_from_name(s);
    ck_assert_msg(d >= 0, "unknown dtype %s", s);
    return (tt_dtype)d;
}

/* "arg T DTYPE A B M C D N NDIM SIZES.. STRIDES.. OFFSET RG [SHARE]":
 * element k of an N-element buffer is ((k*A + B) % M + C) / D, seen
 * through as_strided; with SHARE, the buffer is argument SHARE's (a view
 * of the same memory, for the overlap cases). `arg` is the argument's
 * index, or -1 for an item of a tensor list. */
static tt_tensor *make_tensor(ref_case *c, char **t, int n, int arg)
{
    ck_assert_int_ge(n, 10);
    ck_assert_int_lt(c->nowned, 31);
    tt_dtype dt = dtype_named(t[2]);
    int64_t A = atoll(t[3]), B = atoll(t[4]), M = atoll(t[5]), C = atoll(t[6]), D = atoll(t[7]);
    int64_t nbuf = atoll(t[8]);
    int nd = atoi(t[9]);
    ck_assert(n == 10 + 2 * nd + 2 || n == 10 + 2 * nd + 3);
    int64_t sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        sizes[d] = atoll(t[10 + d]);
        strides[d] = atoll(t[10 + nd + d]);
    }
    int64_t off = atoll(t[10 + 2 * nd]);
    bool rg = atoi(t[11 + 2 * nd]) != 0;
    tt_tensor *buf;
    if (n == 10 + 2 * nd + 3) {
        int share = atoi(t[12 + 2 * nd]);
        ck_assert(share >= 0 && share < arg && c->bufs[share]);
        buf = tt_retain(c->bufs[share]);
    } else {
        double *v = malloc(sizeof(double) * (size_t)nbuf);
        ck_assert_ptr_nonnull(v);
        for (int64_t k = 0; k < nbuf; k++)
            v[k] = (double)((k * A + B) % M + C) / (double)D;
        tt_tensor *f64 = NN(tt_from_data(1, &nbuf, TT_F64, v));
        free(v);
        buf = NN(tt_to_dtype(f64, dt));
        tt_release(f64);
    }
    tt_tensor *x = NN(tt_as_strided(buf, nd, sizes, strides, off));
    if (arg >= 0)
        c->bufs[arg] = c->owned[c->nowned++] = buf;
    else
        tt_release(buf);
    if (rg) {
        tt_tensor *leaf = NN(tt_detach(x));
        tt_release(x);
        x = leaf;
        OK(tt_set_requires_grad(x, true));
    }
    c->owned[c->nowned++] = x;
    return x;
}

static double *parse_doubles(char **t, int n, int64_t *count)
{
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    ck_assert_ptr_nonnull(v);
    for (int i = 0; i < n; i++)
        v[i] = strtod(t[i], NULL);
    *count = n;
    return v;
}

/* Reads one case (after its "case" line) up to "end". */
static void parse_case(reader *r, ref_case *c, char **toks)
{
    char *line;
    int pending_list = -1, list_left = 0;
    while ((line = next_line(r))) {
        if (!strncmp(line, "end", 3))
            return;
        if (!strncmp(line, "note ", 5))
            continue;
        if (!strncmp(line, "err ", 4)) {
            snprintf(c->err, sizeof c->err, "%s", line + 4);
            continue;
        }
        if (!strcmp(line, "meta")) {
            c->meta = true;
            continue;
        }
        int n = split(line, toks, MAX_TOKS);
        if (!strcmp(toks[0], "op")) {
            snprintf(c->op, sizeof c->op, "%s", toks[1]);
        } else if (!strcmp(toks[0], "arg")) {
            if (list_left > 0 && !strcmp(toks[1], "N")) { /* None in a Tensor?[] */
                int i = pending_list, j = c->args[i].n - list_left;
                c->lists[i][j] = NULL;
                c->leaf_of[i][j] = NULL;
                list_left--;
                continue;
            }
            if (list_left > 0 && !strcmp(toks[1], "T")) {
                int i = pending_list, j = c->args[i].n - list_left;
                c->lists[i][j] = make_tensor(c, toks, n, -1);
                c->leaf_of[i][j] = tt_requires_grad(c->lists[i][j]) ? c->lists[i][j] : NULL;
                list_left--;
                continue;
            }
            ck_assert_int_lt(c->nargs, MAX_ARGS);
            int i = c->nargs++;
            const char *k = toks[1];
            if (!strcmp(k, "T")) {
                tt_tensor *x = make_tensor(c, toks, n, i);
                c->args[i] = tt_v_tensor(x);
                c->leaf_of[i][0] = tt_requires_grad(x) ? x : NULL;
            } else if (!strcmp(k, "TL")) {
                list_left = atoi(toks[2]);
                pending_list = i;
                c->args[i] = tt_v_tensors(list_left, c->lists[i]);
            } else if (!strcmp(k, "I")) {
                c->args[i] = tt_v_int(atoll(toks[2]));
            } else if (!strcmp(k, "F")) {
                c->args[i] = tt_v_float(strtod(toks[2], NULL));
            } else if (!strcmp(k, "B")) {
                c->args[i] = tt_v_bool(atoi(toks[2]) != 0);
            } else if (!strcmp(k, "S")) {
                snprintf(c->strs[i], sizeof c->strs[i], "%s", toks[2]);
                c->args[i] = tt_v_str(c->strs[i]);
            } else if (!strcmp(k, "N")) {
                c->args[i] = tt_v_none();
            } else if (!strcmp(k, "L")) {
                int m = atoi(toks[2]);
                for (int j = 0; j < m; j++)
                    c->ints[i][j] = atoll(toks[3 + j]);
                c->args[i] = tt_v_ints(m, c->ints[i]);
            } else if (!strcmp(k, "FL")) {
                int m = atoi(toks[2]);
                for (int j = 0; j < m; j++)
                    c->floats[i][j] = strtod(toks[3 + j], NULL);
                c->args[i] = tt_v_floats(m, c->floats[i]);
            } else if (!strcmp(k, "BL")) {
                int m = atoi(toks[2]);
                for (int j = 0; j < m; j++)
                    c->bools[i][j] = atoi(toks[3 + j]) != 0;
                c->args[i] = tt_v_bools(m, c->bools[i]);
            } else if (!strcmp(k, "D")) {
                c->args[i] = tt_v_dtype(dtype_named(toks[2]));
            } else {
                ck_abort_msg("%s: unknown argument kind %s", c->name, k);
            }
        } else if (!strcmp(toks[0], "list")) {
            c->has_list = true;
            c->list_at = c->nouts;
            c->list_n = atoi(toks[1]);
        } else if (!strcmp(toks[0], "out")) {
            ck_assert_int_lt(c->nouts, MAX_OUTS);
            int o = c->nouts++;
            if (n == 2 && !strcmp(toks[1], "none")) {
                c->outs[o].none = true;
                continue;
            }
            c->outs[o].dt = dtype_named(toks[1]);
            int nd = c->outs[o].ndim = atoi(toks[2]);
            for (int d = 0; d < nd; d++) {
                c->outs[o].sizes[d] = atoll(toks[3 + d]);
                c->outs[o].strides[d] = atoll(toks[3 + nd + d]);
            }
            int first = 3 + 2 * nd;
            c->outs[o].vals = parse_doubles(toks + first, n - first, &c->outs[o].nvals);
        } else if (!strcmp(toks[0], "tol")) {
            c->tol = strtod(toks[1], NULL);
        } else if (!strcmp(toks[0], "after")) {
            ck_assert_int_lt(c->nafters, MAX_OUTS);
            int a = c->nafters++;
            c->after_arg[a] = atoi(toks[1]);
            c->after_vals[a] = parse_doubles(toks + 2, n - 2, &c->after_n[a]);
        } else if (!strcmp(toks[0], "grad")) {
            int g = c->ngrads++;
            ck_assert_int_lt(g, 8);
            snprintf(c->grad_idx[g], sizeof c->grad_idx[g], "%s", toks[1]);
            c->grad_none[g] = n == 3 && !strcmp(toks[2], "none");
            c->grads[g] = c->grad_none[g] ? NULL : parse_doubles(toks + 2, n - 2, &c->ngradv[g]);
        } else {
            ck_abort_msg("%s: unknown record %s", c->name, toks[0]);
        }
    }
}

/* got agrees with want: both NaN, equal infinities, or within the case's
 * tolerance, else the dtype's (f32 results may differ from PyTorch's in the
 * last bits). */
static bool agrees(double got, double want, tt_dtype dt, double case_tol)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got))
        return got == want;
    double tol = case_tol > 0 ? case_tol : dt == TT_F32 ? 1e-5 : dt == TT_F64 ? 1e-10 : 0;
    return fabs(got - want) <= tol * (1 + fabs(want));
}

/* Compares n values of t (row-major) with want. */
static bool values_agree(reader *r, const ref_case *c, const char *what, const tt_tensor *t,
                         const double *want, int64_t n)
{
    if (tt_numel(t) != n) {
        disagree(r, c, "%s: %lld values, PyTorch has %lld", what, (long long)tt_numel(t),
             (long long)n);
        return false;
    }
    double *got = tt_test_values(t);
    bool ok = true;
    for (int64_t k = 0; k < n && ok; k++)
        if (!agrees(got[k], want[k], tt_dtype_of(t), c->tol)) {
            disagree(r, c, "%s: element %lld is %.10g, PyTorch has %.10g", what, (long long)k,
                 got[k], want[k]);
            ok = false;
        }
    free(got);
    return ok;
}

/* The gradient seed: element k of ((k*5 + 2) % 9 - 4) / 8, out's shape. */
static tt_tensor *grad_seed(const tt_tensor *out)
{
    int64_t n = tt_numel(out);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    ck_assert_ptr_nonnull(v);
    for (int64_t k = 0; k < n; k++)
        v[k] = (double)((k * 5 + 2) % 9 - 4) / 8.0;
    int64_t sz[TT_MAX_DIMS];
    for (int d = 0; d < tt_ndim(out); d++)
        sz[d] = tt_sizes(out)[d];
    tt_tensor *f = NN(tt_from_data(tt_ndim(out), sz, TT_F64, v));
    free(v);
    tt_tensor *g = NN(tt_to_dtype(f, tt_dtype_of(out)));
    tt_release(f);
    return g;
}

static void check_grads(reader *r, ref_case *c, tt_tensor *out)
{
    tt_tensor *seed = grad_seed(out);
    tt_status st = tt_backward(out, seed);
    tt_release(seed);
    if (st) {
        disagree(r, c, "backward failed: %s", tt_errmsg());
        return;
    }
    for (int g = 0; g < c->ngrads; g++) {
        int i = atoi(c->grad_idx[g]), j = 0;
        const char *dot = strchr(c->grad_idx[g], '.');
        if (dot)
            j = atoi(dot + 1);
        tt_tensor *leaf = c->leaf_of[i][j];
        ck_assert_ptr_nonnull(leaf);
        tt_tensor *grad = tt_get_grad(leaf);
        char what[32];
        snprintf(what, sizeof what, "grad of argument %s", c->grad_idx[g]);
        if (c->grad_none[g]) {
            /* No gradient flowed in PyTorch; zeros are the same answer. */
            if (grad) {
                double *v = tt_test_values(grad);
                for (int64_t k = 0; k < tt_numel(grad); k++)
                    if (v[k] != 0) {
                        disagree(r, c, "%s: PyTorch has none, got a non-zero gradient", what);
                        break;
                    }
                free(v);
            }
        } else if (!grad) {
            disagree(r, c, "%s: none, PyTorch has one", what);
        } else {
            values_agree(r, c, what, grad, c->grads[g], c->ngradv[g]);
        }
        tt_release(grad);
    }
}

/* Result o's dtype, sizes and strides (dims of size 1 have no meaningful
 * stride) are PyTorch's. */
static bool meta_agrees(reader *r, const ref_case *c, int o, const tt_tensor *t)
{
    bool ok = tt_dtype_of(t) == c->outs[o].dt && tt_ndim(t) == c->outs[o].ndim;
    for (int d = 0; ok && d < c->outs[o].ndim; d++)
        ok = tt_sizes(t)[d] == c->outs[o].sizes[d] &&
             (c->outs[o].sizes[d] <= 1 || tt_strides(t)[d] == c->outs[o].strides[d]);
    if (!ok) {
        char a[128], b[128], ga[128], gb[128];
        tt_size_list_str(c->outs[o].ndim, c->outs[o].sizes, false, a, sizeof a);
        tt_size_list_str(c->outs[o].ndim, c->outs[o].strides, false, b, sizeof b);
        tt_size_list_str(tt_ndim(t), tt_sizes(t), false, ga, sizeof ga);
        tt_size_list_str(tt_ndim(t), tt_strides(t), false, gb, sizeof gb);
        disagree(r, c, "result %d: got %s %s strides %s; PyTorch has %s %s strides %s", o,
                 tt_dtype_name(tt_dtype_of(t)), ga, gb, tt_dtype_name(c->outs[o].dt), a, b);
    }
    return ok;
}

static void run_case(reader *r, ref_case *c)
{
    const tt_op *op = tt_op_find(c->op);
    if (!op) {
        disagree(r, c, "no such op");
        return;
    }
    tt_value outs[MAX_OUTS];
    for (int o = 0; o < MAX_OUTS; o++)
        outs[o] = tt_v_none();
    int nret = tt_schema_nreturns(tt_op_schema(op));
    ck_assert_int_le(nret, MAX_OUTS);
    tt_clear_error();
    tt_status st = tt_op_call(op, c->args, c->nargs, outs, nret);
    if (c->err[0]) {
        if (st == TT_OK)
            disagree(r, c, "accepted; PyTorch refuses it (%s)", c->err);
        else if (!tt_errmsg()[0])
            disagree(r, c, "refused without a message");
        for (int o = 0; o < nret; o++)
            tt_value_clear(&outs[o]);
        return;
    }
    if (st) {
        disagree(r, c, "refused (%s); PyTorch accepts it", tt_errmsg());
        return;
    }
    /* The results with a Tensor[] result's elements in its place, as the
     * file lists them. */
    tt_tensor *res[MAX_OUTS];
    int nres = 0, list_at = -1, list_n = 0;
    for (int o = 0; o < nret; o++) {
        if (outs[o].kind == TT_V_TENSORS) {
            list_at = nres, list_n = outs[o].n;
            for (int e = 0; e < outs[o].n; e++)
                if (nres < MAX_OUTS)
                    res[nres++] = outs[o].u.tensors[e];
        } else if (nres < MAX_OUTS) {
            res[nres++] = outs[o].kind == TT_V_TENSOR ? outs[o].u.t : NULL;
        }
    }
    if ((list_at >= 0) != c->has_list ||
        (c->has_list && (list_at != c->list_at || list_n != c->list_n))) {
        disagree(r, c, "returned a list of %d tensors at %d, PyTorch %s%d at %d", list_n,
                 list_at, c->has_list ? "a list of " : "no list ", c->list_n, c->list_at);
        goto done;
    }
    if (nres != c->nouts) {
        disagree(r, c, "returned %d results, PyTorch %d", nres, c->nouts);
        goto done;
    }
    bool ok = true;
    for (int o = 0; o < nres && ok; o++) {
        tt_tensor *t = res[o];
        if (c->outs[o].none) {
            if (t) {
                disagree(r, c, "result %d: a tensor, PyTorch has None", o);
                ok = false;
            }
            continue;
        }
        if (!t) {
            disagree(r, c, "result %d: no tensor", o);
            ok = false;
        } else {
            char what[32];
            snprintf(what, sizeof what, o ? "value of result %d" : "value", o);
            ok = meta_agrees(r, c, o, t) &&
                 (c->meta || values_agree(r, c, what, t, c->outs[o].vals, c->outs[o].nvals));
        }
    }
    for (int a = 0; a < c->nafters && ok; a++) {
        int i = c->after_arg[a];
        ck_assert(i < c->nargs && c->args[i].kind == TT_V_TENSOR);
        char what[48];
        snprintf(what, sizeof what, "argument %d after the call", i);
        ok = values_agree(r, c, what, c->args[i].u.t, c->after_vals[a], c->after_n[a]);
    }
    /* Gradients are of sum(result 0 * g). */
    if (ok && !c->meta && c->ngrads)
        check_grads(r, c, res[0]);
    /* Every call PyTorch accepts is also opchecked: the fake kernel gives
     * the real layout, the schema's mutation and aliasing hold, and a
     * symbolic trace replays to the eager result (and gradients). Not for
     * results with unspecified values (empty, rand: "meta" cases). The
     * ops that return a view or a copy as their input's layout allows
     * (PyTorch's reshape, flatten, contiguous: Tensor(a) means "may
     * alias" there) skip the schema check, which requires an annotated
     * result to alias. */
    if (ok && !c->meta) {
        static const char *const may_alias[] = {"tt::reshape", "tt::flatten.using_ints",
                                                "tt::contiguous"};
        unsigned checks = 0;
        for (size_t k = 0; k < sizeof may_alias / sizeof *may_alias; k++)
            if (!strcmp(c->op, may_alias[k]))
                checks = ((1u << TT_OPCHECK_NCHECKS) - 1) & ~(unsigned)TT_OPCHECK_SCHEMA;
        tt_opcheck_report rep;
        if (tt_opcheck(op, c->args, c->nargs, &(tt_opcheck_opts){.checks = checks}, &rep)) {
            char *txt = tt_opcheck_report_to_text(&rep);
            disagree(r, c, "opcheck: %s", txt);
            free(txt);
        }
    }
done:
    for (int o = 0; o < nret; o++)
        tt_value_clear(&outs[o]);
}

static void free_case(ref_case *c)
{
    for (int i = 0; i < c->nowned; i++)
        tt_release(c->owned[i]);
    for (int o = 0; o < c->nouts; o++)
        free(c->outs[o].vals);
    for (int a = 0; a < c->nafters; a++)
        free(c->after_vals[a]);
    for (int g = 0; g < c->ngrads; g++)
        free(c->grads[g]);
}

START_TEST(test_torch_reference)
{
    const char *dir = getenv("TT_TEST_SRCDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/data/torch_ref.txt", dir ? dir : "tests");
    reader r = {tt_test_read_file(path), NULL, 0, 0};
    r.pos = r.buf;
    static char *toks[MAX_TOKS];
    char *line;
    while ((line = next_line(&r))) {
        if (line[0] == '#' || !line[0])
            continue;
        ck_assert_msg(!strncmp(line, "case ", 5), "expected a case, got: %s", line);
        ref_case *c = calloc(1, sizeof *c);
        ck_assert_ptr_nonnull(c);
        snprintf(c->name, sizeof c->name, "#%d %s", r.cases + 1, line + 5);
        parse_case(&r, c, toks);
        run_case(&r, c);
        free_case(c);
        free(c);
        r.cases++;
    }
    free(r.buf);
    ck_assert_int_gt(r.cases, 1000);
    ck_assert_msg(r.failures == 0, "%d of %d calls disagree with PyTorch (listed above)",
                  r.failures, r.cases);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("torch_ref");
    TCase *tc = tt_tcase("torch_ref");
    tcase_add_test(tc, test_torch_reference);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(make_suite)
