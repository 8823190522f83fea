/* Elementwise fusion for compiled plans.
 *
 * A chain of elementwise ops over dense tensors of one shape and float
 * dtype becomes one fused step: the step walks memory once, in blocks of
 * BLOCK elements, running the whole chain on each block in small buffers
 * that stay in cache, and writes only the chain's result. The ops'
 * intermediate tensors are never allocated. Which ops join is the
 * pointwise tag's to say; a built-in's formula is its row in
 * ops/pointwise_ops.h, the same expression its eager kernel runs
 * (tests/test_fusion.c holds every tagged op to that, bit for bit).
 *
 * A comparison feeding a product (ReLU's backward: g * (y > 0)) fuses
 * too: inside the chain the mask is the float 1 or 0, and g * 1.0,
 * g * 0.0 are what eager's bool-to-float promotion computes, bit for bit.
 *
 * In place: when an input of the step dies at the step and nothing else
 * holds its memory (checked on the references when the step runs), the
 * result is written over it, so the step allocates nothing. A single
 * fusable op whose operand has no other reader becomes a step of its own
 * for that (ReLU over a linear's fresh output).
 *
 * A custom op tagged pointwise (with a fake kernel, so it traces) joins a
 * chain too: its kernel runs on each chunk, given chunk-sized tensors over
 * the chain's buffers, because a pointwise op's result on a slice of its
 * inputs is that slice of its result. Its chunks are whole rows (slices of
 * the first dim, so the kernel sees its inputs' rank) of CUSTOM_BLOCK
 * elements or more, to pay for a call per chunk, and run on this thread
 * (the kernel is user code, and its errors are this thread's). */
#include "fuse_impl.h"
#include "builtin_ops.h"
#include "tensor_impl.h"
#include "vec_math.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 256
#define PARALLEL_MIN (1 << 16)
#define CUSTOM_BLOCK 16384
#define CUSTOM_MAX_ARGS 32
#define NO_SRC INT32_MIN /* a custom op's argument that is no tensor */

/* The micro-ops: the kinds of the pointwise list (ops/pointwise_ops.h),
 * whose formulas the eager kernels run too, and a custom op. */
typedef enum {
#define U_KIND(K, ...) U_##K,
    TT_POINTWISE_ARITH(U_KIND)   /* a op b, b a tensor or the Scalar s */
    TT_POINTWISE_MINMAX(U_KIND)  /* a op b, b a tensor */
    TT_POINTWISE_COMPARE(U_KIND) /* a op b as 1 or 0: a bool result, so only
                                    a mask inside a chain */
    TT_POINTWISE_LOGICAL(U_KIND) /* likewise */
    TT_POINTWISE_UNARY(U_KIND)
    TT_POINTWISE_PARAM(U_KIND)   /* a with Scalar parameters p0, p1, p2 */
#undef U_KIND
    U_CUSTOM, /* a custom op tagged pointwise: its kernel per chunk */
} ucode;

/* The parameterized kinds come last before U_CUSTOM: how many, and each
 * one's parameter count and the schema's defaults. */
#define U_PARAM_COUNT1(...) +1
enum { U_NPARAM = 0 TT_POINTWISE_PARAM(U_PARAM_COUNT1), U_PARAM0 = U_CUSTOM - U_NPARAM };
#undef U_PARAM_COUNT1
static const struct {
    int n;
    double d[3];
} param_info[U_NPARAM + 1] = {
#define U_PARAM_INFO(K, ROW, NP, D0, D1, D2, ...) {NP, {D0, D1, D2}},
    TT_POINTWISE_PARAM(U_PARAM_INFO)
#undef U_PARAM_INFO
};
static bool is_param(int c) { return c >= U_PARAM0 && c < U_CUSTOM; }

static bool is_binary(int c) { return c >= 0 && c < U_NEG; }
static bool is_compare(int c) { return c >= U_EQ && c < U_NEG; }

/* The micro-op of each built-in row the list names, plus one (0: none).
 * gelu's tanh form has no row (_NONE, the extra last entry): fusable()
 * picks it by gelu's argument. */
#define U_ROW_BIN(K, TROW, SROW, ...) [TT_OP_##TROW] = U_##K + 1, [TT_OP_##SROW] = U_##K + 1,
#define U_ROW_UN(K, ROW, ...) [TT_OP_##ROW] = U_##K + 1,
static const int8_t code_plus1[TT_OP_COUNT + 1] = {
    TT_POINTWISE_ARITH(U_ROW_BIN) TT_POINTWISE_COMPARE(U_ROW_BIN)
    TT_POINTWISE_MINMAX(U_ROW_UN) TT_POINTWISE_LOGICAL(U_ROW_UN)
    TT_POINTWISE_UNARY(U_ROW_UN) TT_POINTWISE_PARAM(U_ROW_UN)
};
#undef U_ROW_BIN
#undef U_ROW_UN

/* A custom pointwise op's call: the recorded arguments, with a source
 * (as a uop's) for each tensor argument. */
typedef struct {
    const tt_op *op;
    int nargs;
    int src[CUSTOM_MAX_ARGS];
    tt_value args[CUSTOM_MAX_ARGS];
} custom_call;

/* One micro-op: dst = code(a, b) over a block, b the Scalar s when
 * bscalar; alpha scales b for add and sub. Sources index the step's
 * temporaries (>= 0) or its external inputs (-1 - i). */
typedef struct {
    ucode code;
    int a, b;
    bool bscalar;
    double s, alpha;
    double p[3]; /* a parameterized kind's p0, p1, p2 */
    custom_call *cc; /* U_CUSTOM */
} uop;

struct fused_step {
    tt_dtype dtype;
    int ndim;
    int nuops;
    uop uops[FUSE_MAX];
    int ninputs;
    gref inputs[FUSE_MAX + 1]; /* the external tensors */
    gref output;               /* the chain's result value */
    int nodes[FUSE_MAX];       /* the graph nodes it replaces */
    bool custom;               /* has a U_CUSTOM: runs in row chunks */
};

/* What fuses is decided by the pointwise tag, built-in or custom: a
 * built-in's micro-op is its row's kind in the pointwise list (a tagged
 * built-in the list does not name, such as where, is not fused), and a
 * built-in whose kernel an IMPL library overrides runs that kernel, not
 * the list's formula. A custom op's tag promises elementwise; its fake
 * kernel is what let it trace. */
static int code_of(const tt_op *op)
{
    if (!(tt_op_tags(op) & TT_TAG_POINTWISE))
        return -1;
    int id = tt__builtin_id(op);
    if (id >= 0)
        return atomic_load(&tt__builtin_overridden[id]) ? -1 : code_plus1[id] - 1;
    return tt_op_has_fake(op) ? U_CUSTOM : -1;
}

/* A node's micro-op, its arguments read: gelu's approximate picks the erf
 * or the tanh form (-1 for another string). */
static int node_code(const gnode *n)
{
    int code = code_of(n->op);
    if (code != U_GELU || n->nargs < 2)
        return code;
    const garg *ga = &n->args[1];
    if (ga->kind != GARG_CONST || ga->v.kind != TT_V_STR || !ga->v.u.s)
        return -1;
    return !strcmp(ga->v.u.s, "none") ? U_GELU : !strcmp(ga->v.u.s, "tanh") ? U_GELU_TANH : -1;
}

static double scalar_of(const garg *a)
{
    return a->v.kind == TT_V_FLOAT ? a->v.u.f : a->v.kind == TT_V_BOOL ? a->v.u.b : (double)a->v.u.i;
}

static bool same_dense_shape(const tt_tensor *t, const tt_tensor *out)
{
    if (!t || tt_ndim(t) != tt_ndim(out) || !tt_is_contiguous(t))
        return false;
    for (int d = 0; d < tt_ndim(t); d++)
        if (tt_sizes(t)[d] != tt_sizes(out)[d])
            return false;
    return true;
}

static bool dense_like(const tt_tensor *t, const tt_tensor *out)
{
    return t && tt_dtype_of(t) == tt_dtype_of(out) && same_dense_shape(t, out);
}

static bool is_mask(const tt_graph *g, gref r)
{
    const gnode *n = &g->nodes[r.node];
    return n->kind == TT_NODE_OP && is_compare(code_of(n->op));
}

/* Whether node i can join a fused chain: a listed op whose tensor inputs
 * and result are dense, of the result's shape and of a float dtype (a
 * comparison's bool result and a product's operand that is such a result
 * aside: build() keeps those inside the chain). */
static bool fusable(const tt_graph *g, int i)
{
    const gnode *n = &g->nodes[i];
    int code = n->kind == TT_NODE_OP && n->nvals == 1 ? node_code(n) : -1;
    if (code < 0)
        return false;
    const tt_tensor *out = n->vals[0];
    tt_dtype dt = out ? tt_dtype_of(out) : TT_BOOL;
    if (is_compare(code)) { /* compares float data: the input's dtype counts */
        gref r = n->args[0].ref;
        const tt_tensor *x = n->args[0].kind == GARG_REF ? g->nodes[r.node].vals[r.out] : NULL;
        if (!x || dt != TT_BOOL)
            return false;
        dt = tt_dtype_of(x);
        out = x;
    }
    if (!out || (dt != TT_F32 && dt != TT_F64) || !tt_is_contiguous(out))
        return false;
    if (code == U_CUSTOM && n->nargs > CUSTOM_MAX_ARGS)
        return false;
    for (int a = 0; a < n->nargs; a++) {
        const garg *ga = &n->args[a];
        if (ga->kind == GARG_REFS)
            return false;
        const tt_tensor *v = ga->kind == GARG_REF ? g->nodes[ga->ref.node].vals[ga->ref.out] : NULL;
        if (ga->kind == GARG_REF && !dense_like(v, out) &&
            !(code == U_MUL && is_mask(g, ga->ref) && same_dense_shape(v, out)))
            return false;
        /* gelu's approximate: node_code read it. */
        if (a == 1 && (code == U_GELU || code == U_GELU_TANH))
            continue;
        if (ga->kind == GARG_CONST && code != U_CUSTOM && ga->v.kind != TT_V_INT &&
            ga->v.kind != TT_V_FLOAT && ga->v.kind != TT_V_BOOL)
            return false;
        /* An int Scalar that is a symbolic size (n - 1 in var's backward)
         * is evaluated per call by the interpreter; a micro-op would read
         * the handle as a number. */
        if (ga->kind == GARG_CONST && ga->v.kind == TT_V_INT && tt_size_is_sym(ga->v.u.i))
            return false;
    }
    return true;
}

static bool writes(const gnode *n)
{
    const tt_schema *s = n->kind == TT_NODE_OP ? tt_op_schema(n->op) : NULL;
    for (int a = 0; s && a < n->nargs; a++)
        if (tt_schema_arg(s, a)->is_write)
            return true;
    return false;
}

static bool reads(const gnode *n, int node)
{
    for (int a = 0; a < n->nargs; a++)
        if (n->args[a].kind == GARG_REF && n->args[a].ref.node == node)
            return true;
    return false;
}

/* Every user of `node` is one of the chain's members. */
static bool contained(const tt_graph *g, int node, const int *members, int n)
{
    if (tt__graph_is_output(g, node))
        return false;
    const gnode *x = &g->nodes[node];
    for (int u = 0; u < x->nusers; u++) {
        bool in = false;
        for (int k = 0; k < n && !in; k++)
            in = members[k] == x->users[u];
        if (!in)
            return false;
    }
    return true;
}

static int source_of(fused_step *f, gref r, const int *members, int n)
{
    for (int k = 0; k < n; k++)
        if (members[k] == r.node)
            return k;
    for (int i = 0; i < f->ninputs; i++)
        if (f->inputs[i].node == r.node && f->inputs[i].out == r.out)
            return -1 - i;
    f->inputs[f->ninputs] = r;
    return -1 - f->ninputs++;
}

/* The fused step of the chain members[0..n), or NULL: with *oom set when
 * it could not be allocated, else because the chain is left unfused. */
static fused_step *build(const tt_graph *g, const int *members, int n, bool *oom)
{
    fused_step *f = tt__calloc(1, sizeof *f);
    if (!f) {
        *oom = true;
        return NULL;
    }
    const tt_tensor *out = g->nodes[members[n - 1]].vals[0];
    f->dtype = tt_dtype_of(out);
    if (f->dtype != TT_F32 && f->dtype != TT_F64) /* a comparison's bool last */
        return tt__fused_free(f);
    f->ndim = tt_ndim(out);
    f->output = (gref){members[n - 1], 0};
    for (int k = 0; k < n; k++) {
        const gnode *x = &g->nodes[members[k]];
        uop *u = &f->uops[k];
        u->code = (ucode)node_code(x);
        u->s = 0;
        u->alpha = 1;
        u->b = 0;
        f->nodes[k] = members[k];
        if (u->code == U_CUSTOM) {
            custom_call *cc = u->cc = tt__calloc(1, sizeof *cc);
            if (!cc) {
                *oom = true;
                return tt__fused_free(f);
            }
            cc->op = x->op;
            cc->nargs = x->nargs;
            for (int a = 0; a < x->nargs; a++) {
                bool ref = x->args[a].kind == GARG_REF;
                cc->src[a] = ref ? source_of(f, x->args[a].ref, members, n) : NO_SRC;
                cc->args[a] = ref ? tt_v_none() : x->args[a].v;
            }
            f->custom = true;
            continue;
        }
        u->a = source_of(f, x->args[0].ref, members, n);
        if (is_binary(u->code)) {
            u->bscalar = x->args[1].kind != GARG_REF;
            if (u->bscalar)
                u->s = scalar_of(&x->args[1]);
            else
                u->b = source_of(f, x->args[1].ref, members, n);
            if ((u->code == U_ADD || u->code == U_SUB) && x->nargs > 2)
                u->alpha = scalar_of(&x->args[2]);
        } else if (is_param(u->code)) { /* arguments 1.., else the defaults */
            for (int k = 0; k < 3; k++)
                u->p[k] = k < param_info[u->code - U_PARAM0].n && x->nargs > 1 + k
                              ? scalar_of(&x->args[1 + k])
                              : param_info[u->code - U_PARAM0].d[k];
        }
    }
    f->nuops = n;
    /* External inputs are read as the chain's dtype: a mask from outside
     * the chain (or a dtype mix) leaves it unfused. */
    for (int i = 0; i < f->ninputs; i++)
        if (tt_dtype_of(g->nodes[f->inputs[i].node].vals[f->inputs[i].out]) != f->dtype)
            return tt__fused_free(f);
    return f;
}

/* A lone fusable op worth a step of its own: its operand has no other
 * reader and is an op's fresh result, so the step can write over it. */
static bool single_in_place(const tt_graph *g, int i)
{
    const gnode *n = &g->nodes[i];
    int code = node_code(n);
    if (is_compare(code) || code == U_CUSTOM || n->args[0].kind != GARG_REF)
        return false;
    const gnode *src = &g->nodes[n->args[0].ref.node];
    return src->kind == TT_NODE_OP && src->nvals == 1 && src->nusers == 1 &&
           !tt__graph_is_output(g, n->args[0].ref.node) &&
           dense_like(src->vals[0], n->vals[0]);
}

int tt__fuse_plan(const tt_graph *g, fused_step **steps_out, int *step_of_node, int max_steps,
                  bool singles)
{
    int nsteps = 0;
    int members[FUSE_MAX], n = 0;
    for (int i = 0; i <= g->n; i++) {
        bool end = i == g->n;
        const gnode *x = end ? NULL : &g->nodes[i];
        bool joins = !end && n > 0 && n < FUSE_MAX && fusable(g, i) && reads(x, members[n - 1]);
        if (joins) {
            members[n++] = i;
            continue;
        }
        /* Close the chain: keep the longest prefix whose intermediates are
         * used only inside it; fuse it if it has two or more ops. Cutting
         * the chain shorter can leave an earlier intermediate read by a
         * member cut off (a = abs(x), b = a + 0.5, c = a / b with b read
         * outside: cut after b, a's reader c is outside), so check again
         * until the prefix holds. */
        int keep = n;
        for (bool cut = true; cut;) {
            cut = false;
            for (int k = 0; k + 1 < keep; k++)
                if (!contained(g, members[k], members, keep)) {
                    keep = k + 1;
                    cut = true;
                    break;
                }
        }
        if ((keep >= 2 || (keep == 1 && singles && single_in_place(g, members[0]))) &&
            nsteps < max_steps) {
            bool oom = false;
            fused_step *f = build(g, members, keep, &oom);
            if (oom) {
                for (int k = 0; k < nsteps; k++)
                    steps_out[k] = tt__fused_free(steps_out[k]);
                return -1;
            }
            if (f) {
                steps_out[nsteps] = f;
                for (int k = 0; k < keep; k++)
                    step_of_node[members[k]] = nsteps;
                nsteps++;
            }
        }
        n = 0;
        /* A node that writes memory ends any chain (a member read before it
         * would run after it); a fusable node starts one. */
        if (!end && !writes(x) && fusable(g, i))
            members[n++] = i;
    }
    return nsteps;
}

gref tt__fused_output(const fused_step *f) { return f->output; }
int tt__fused_num_inputs(const fused_step *f) { return f->ninputs; }
gref tt__fused_input(const fused_step *f, int i) { return f->inputs[i]; }
int tt__fused_num_nodes(const fused_step *f) { return f->nuops; }
int tt__fused_node(const fused_step *f, int k) { return f->nodes[k]; }
fused_step *tt__fused_free(fused_step *f)
{
    for (int k = 0; f && k < FUSE_MAX; k++)
        tt__free(f->uops[k].cc);
    tt__free(f);
    return NULL;
}

/* ----------------------------------------------------------------- running */

/* A block's view of the step's memory: the external inputs at this
 * block, and the temporaries (`stride` elements apart). */
typedef struct {
    char *const *in;
    char *tmp;
    int64_t stride;
} block_mem;

static char *src_ptr(const block_mem *m, int src, size_t es)
{
    return src >= 0 ? m->tmp + (size_t)src * (size_t)m->stride * es : m->in[-1 - src];
}

/* A custom pointwise op on one chunk of n elements (whole rows of the
 * step's shape `sizes`): its tensor arguments become tensors over the
 * chunk's sources, and its result is copied to d. */
static tt_status run_custom(const fused_step *f, const custom_call *cc, const block_mem *m,
                            char *d, int64_t n, const int64_t *sizes)
{
    size_t es = tt_dtype_size(f->dtype);
    int64_t chunk[TT_MAX_DIMS];
    for (int i = 0; i < f->ndim; i++)
        chunk[i] = sizes[i];
    int64_t row = 1;
    for (int i = 1; i < f->ndim; i++)
        row *= sizes[i];
    if (f->ndim > 0)
        chunk[0] = n / row; /* the caller keeps rows whole, and row > 0 */
    tt_value args[CUSTOM_MAX_ARGS], out = tt_v_none();
    tt_status st = TT_OK;
    for (int a = 0; a < cc->nargs; a++) {
        args[a] = cc->args[a];
        if (cc->src[a] == NO_SRC)
            continue;
        args[a] = tt_v_tensor(tt_from_buffer(f->ndim, chunk, NULL, f->dtype,
                                             src_ptr(m, cc->src[a], es), (size_t)n * es, NULL,
                                             NULL));
        if (!args[a].u.t && !st)
            st = tt_errcode();
    }
    if (!st)
        st = tt_op_call_unchecked(cc->op, args, cc->nargs, &out, 1);
    tt_tensor *r = out.kind == TT_V_TENSOR ? out.u.t : NULL;
    if (!st && (!r || tt_dtype_of(r) != f->dtype || tt_ndim(r) != f->ndim ||
                memcmp(tt_sizes(r), chunk, sizeof *chunk * (size_t)f->ndim) != 0)) {
        char got[256] = "nothing", want[64];
        if (r)
            tt_describe(r, got, sizeof got);
        tt_size_list_str(f->ndim, chunk, false, want, sizeof want);
        st = tt_error(TT_EOPCHECK, "%s: tagged pointwise and fused into an elementwise chain, "
                                   "its kernel returned %s for a chunk %s%s; a pointwise op "
                                   "returns its inputs' shape and the dtype its fake kernel "
                                   "gives (%s)", tt_op_name(cc->op), got,
                      tt_dtype_name(f->dtype), want, tt_dtype_name(f->dtype));
    }
    if (!st && tt_is_contiguous(r)) {
        memcpy(d, tt_data(r), (size_t)n * es);
    } else if (!st) {
        tt_tensor *dst = tt_from_buffer(f->ndim, chunk, NULL, f->dtype, d, (size_t)n * es,
                                        NULL, NULL);
        st = dst ? tt_copy_(dst, r) : tt_errcode();
        tt_release(dst);
    }
    tt_value_clear(&out);
    for (int a = 0; a < cc->nargs; a++)
        if (cc->src[a] != NO_SRC)
            tt_release(args[a].u.t);
    return st;
}

/* Each micro-op's loop over a block, from the pointwise list: the
 * formula the eager kernel runs, on the same operands in the same dtype,
 * so fused and eager agree bit for bit. f32 transcendentals use the
 * vector kernels when the CPU has them, as eager does. */
#define FUSE_BIN_CASE(T, K, EXPR)                                              \
    case U_##K:                                                                \
        if (B) {                                                               \
            for (int64_t i = 0; i < n; i++) {                                  \
                T a = A[i], b = B[i];                                          \
                d[i] = (T)(EXPR);                                              \
            }                                                                  \
        } else {                                                               \
            const T b = s;                                                     \
            for (int64_t i = 0; i < n; i++) {                                  \
                T a = A[i];                                                    \
                d[i] = (T)(EXPR);                                              \
            }                                                                  \
        }                                                                      \
        break;
#define FUSE_BIN_F32(K, TROW, SROW, F32, F64) FUSE_BIN_CASE(float, K, F32)
#define FUSE_BIN_F64(K, TROW, SROW, F32, F64) FUSE_BIN_CASE(double, K, F64)
/* The Tensor-only binary lists (minmax, logical): one row column. */
#define FUSE_BIN1_F32(K, ROW, F32, F64) FUSE_BIN_CASE(float, K, F32)
#define FUSE_BIN1_F64(K, ROW, F32, F64) FUSE_BIN_CASE(double, K, F64)
#define FUSE_UN_CASE(T, K, EXPR, HAS_VEC)                                      \
    case U_##K:                                                                \
        if (HAS_VEC && tt__vec_f32(TT_VEC_##K, (float *)d, (const float *)A, n)) \
            break;                                                             \
        for (int64_t i = 0; i < n; i++) {                                      \
            T a = A[i];                                                        \
            d[i] = (T)(EXPR);                                                  \
        }                                                                      \
        break;
#define FUSE_UN_F32(K, ROW, F32, F64, VEC) FUSE_UN_CASE(float, K, F32, TT__PW_HAS_VEC(VEC))
#define FUSE_UN_F64(K, ROW, F32, F64, VEC) FUSE_UN_CASE(double, K, F64, 0)
#define FUSE_PAR_CASE(T, K, EXPR)                                              \
    case U_##K: {                                                              \
        const T p0 = (T)u->p[0], p1 = (T)u->p[1], p2 = (T)u->p[2];             \
        (void)p0, (void)p1, (void)p2;                                          \
        for (int64_t i = 0; i < n; i++) {                                      \
            T a = A[i];                                                        \
            d[i] = (T)(EXPR);                                                  \
        }                                                                      \
        break;                                                                 \
    }
#define FUSE_PAR_F32(K, ROW, NP, D0, D1, D2, F32, F64) FUSE_PAR_CASE(float, K, F32)
#define FUSE_PAR_F64(K, ROW, NP, D0, D1, D2, F32, F64) FUSE_PAR_CASE(double, K, F64)

#define RUN_BLOCK(T, BIN, BIN1, UN, PAR)                                             \
    static tt_status run_block_##T(const fused_step *f, const block_mem *m, T *out, \
                                   int64_t n, const int64_t *sizes)            \
    {                                                                          \
        for (int k = 0; k < f->nuops; k++) {                                   \
            const uop *u = &f->uops[k];                                        \
            const T *A = (const T *)src_ptr(m, u->a, sizeof(T));              \
            const T *B = is_binary(u->code) && !u->bscalar                     \
                             ? (const T *)src_ptr(m, u->b, sizeof(T)) : NULL;  \
            T *d = k == f->nuops - 1 ? out : (T *)src_ptr(m, k, sizeof(T));   \
            const T s = (T)u->s, alpha = (T)u->alpha;                          \
            switch (u->code) {                                                 \
            case U_CUSTOM: {                                                   \
                tt_status st = run_custom(f, u->cc, m, (char *)d, n, sizes);   \
                if (st)                                                        \
                    return st;                                                 \
                break;                                                         \
            }                                                                  \
            TT_POINTWISE_ARITH(BIN)                                            \
            TT_POINTWISE_COMPARE(BIN)                                          \
            TT_POINTWISE_MINMAX(BIN1)                                          \
            TT_POINTWISE_LOGICAL(BIN1)                                         \
            TT_POINTWISE_UNARY(UN)                                             \
            TT_POINTWISE_PARAM(PAR)                                            \
            }                                                                  \
        }                                                                      \
        return TT_OK;                                                          \
    }

typedef float f32;
typedef double f64;
RUN_BLOCK(f32, FUSE_BIN_F32, FUSE_BIN1_F32, FUSE_UN_F32, FUSE_PAR_F32)
RUN_BLOCK(f64, FUSE_BIN_F64, FUSE_BIN1_F64, FUSE_UN_F64, FUSE_PAR_F64)

typedef struct {
    const fused_step *f;
    char *in[FUSE_MAX + 1];
    char *out;
    int64_t n;
    /* The operands outgrow the last-level cache: each block's result goes
     * to a staging buffer (`stage`, each thread's own, set by run_range)
     * and is streamed out with non-temporal stores, as eager ops do. */
    bool stream;
    char *stage;
} fuse_job;

/* Blocks of `block` elements from begin to end, with temporaries at tmp
 * (FUSE_MAX x block elements); stops at the first failure (a custom op's). */
static tt_status run_blocks_at(const fuse_job *j, int64_t begin, int64_t end, int64_t block,
                               char *tmp, const int64_t *sizes)
{
    size_t es = tt_dtype_size(j->f->dtype);
    tt_status st = TT_OK;
    for (int64_t b = begin; b < end && !st; b += block) {
        int64_t n = end - b < block ? end - b : block;
        char *in[FUSE_MAX + 1];
        for (int i = 0; i < j->f->ninputs; i++)
            in[i] = j->in[i] + (size_t)b * es;
        block_mem m = {in, tmp, block};
        char *out = j->stage ? j->stage : j->out + (size_t)b * es;
        /* The pointers stay char * and are converted one by one: reading
         * this char * array through a double ** broke strict aliasing, and
         * at -O3 the f64 path read every block from the first one's
         * inputs. */
        if (j->f->dtype == TT_F32)
            st = run_block_f32(j->f, &m, (float *)(void *)out, n, sizes);
        else
            st = run_block_f64(j->f, &m, (double *)(void *)out, n, sizes);
        if (j->stage)
            tt__stream_copy(j->out + (size_t)b * es, out, (size_t)n * es);
    }
    if (j->stage)
        tt__stream_fence();
    return st;
}

static void run_range(int64_t begin, int64_t end, void *vjob)
{
    /* Built-in micro-ops only: nothing fails. */
    union {
        float f[FUSE_MAX * BLOCK];
        double d[FUSE_MAX * BLOCK];
    } tmp;
    _Alignas(64) double stage[BLOCK];
    fuse_job j = *(const fuse_job *)vjob;
    j.stage = j.stream ? (char *)stage : NULL;
    (void)run_blocks_at(&j, begin, end, BLOCK, (char *)&tmp, NULL);
}

static void run_blocks(int64_t begin, int64_t end, void *vjob)
{
    const fuse_job *j = vjob;
    int64_t e = end * BLOCK < j->n ? end * BLOCK : j->n;
    run_range(begin * BLOCK, e, vjob);
}

/* A chain with a custom op: chunks of whole rows (at least CUSTOM_BLOCK
 * elements, or all of it) on this thread, temporaries on the heap. */
static tt_status run_custom_chain(const fuse_job *j, const tt_tensor *shape)
{
    int ndim = tt_ndim(shape);
    int64_t sizes[TT_MAX_DIMS], n = tt_numel(shape), row = n;
    for (int i = 0; i < ndim; i++)
        sizes[i] = tt_sizes(shape)[i];
    if (n == 0)
        return TT_OK;
    if (ndim > 0)
        row = n / sizes[0];
    int64_t block = row >= CUSTOM_BLOCK ? row : CUSTOM_BLOCK / row * row;
    if (block > n)
        block = n;
    size_t es = tt_dtype_size(j->f->dtype);
    char *tmp = tt__malloc((size_t)j->f->nuops * (size_t)block * es);
    if (!tmp)
        return tt_error(TT_ENOMEM, "compiled plan: out of memory for a fused chain's "
                                   "buffers");
    tt_status st = run_blocks_at(j, 0, n, block, tmp, sizes);
    tt__free(tmp);
    return st;
}

/* Whether t's memory can take the result: only the plan's slot holds the
 * tensor, only the tensor holds the storage, and the tensor is all of its
 * storage from offset 0, so the result is what tt_empty would have made.
 * A slice's memory would not do: the result would sit at the slice's
 * offset in a larger storage, and tt_as_strided, which addresses the
 * storage, would read other elements than eagerly (tt-difftest seed
 * 328633: as_strided(slice(x, 0, 3, 6) + 2, [1], [2], 1)). */
static bool donatable(const tt_tensor *t)
{
    return atomic_load(&t->refcnt) == 1 && atomic_load(&t->storage->refcnt) == 1 &&
           !t->storage->fake && t->storage->data && t->offset == 0 &&
           (t->flags & TT_TF_CONTIGUOUS) &&
           t->storage->nbytes == (size_t)tt_numel(t) * tt_dtype_size(tt_dtype_of(t));
}

tt_status tt__fused_run(const fused_step *f, tt_tensor *const *inputs, uint64_t dying,
                        tt_tensor **out)
{
    *out = NULL;
    const tt_tensor *first = inputs[0];
    /* The layout the chain was fused for must hold at run time. */
    for (int i = 0; i < f->ninputs; i++)
        if (!dense_like(inputs[i], first) || tt_dtype_of(inputs[i]) != f->dtype)
            return tt_error(TT_EGUARD, "compiled plan: a fused elementwise chain got inputs "
                                       "of another shape or layout than it was planned for");
    tt_tensor *r = NULL;
    for (int i = 0; i < f->ninputs && !r; i++)
        if ((dying >> i & 1) && donatable(inputs[i]))
            r = tt_retain(inputs[i]);
    if (!r)
        r = tt_empty(tt_ndim(first), tt_sizes(first), f->dtype);
    if (!r)
        return tt_errcode() ? tt_errcode()
                            : tt_error(TT_ENOMEM, "compiled plan: out of memory for a fused "
                                                  "elementwise chain's result");
    int64_t n = tt_numel(r);
    fuse_job j = {f, {0}, tt_data(r), n, false, NULL};
    bool no_data = n > 0 && !j.out;
    for (int i = 0; i < f->ninputs; i++) {
        j.in[i] = tt_data(inputs[i]);
        no_data |= n > 0 && !j.in[i];
    }
    if (no_data) {
        tt_release(r);
        /* A fake tensor reached a real run: say so, whatever tt_data said. */
        return tt_errcode() ? tt_errcode()
                            : tt_error(TT_EINTERNAL, "compiled plan: a fused elementwise "
                                                     "chain got a tensor without data");
    }
    if (f->custom) {
        tt_status st = run_custom_chain(&j, first);
        if (st) {
            tt_release(r);
            return st;
        }
        *out = r;
        return TT_OK;
    }
    j.stream = tt__stream_worthwhile(n * (int64_t)tt_dtype_size(f->dtype) * (f->ninputs + 1));
    /* Threads take whole blocks, so results do not depend on them. */
    if (n < PARALLEL_MIN) {
        run_range(0, n, &j);
    } else {
        j.n = n;
        tt_parallel_for((n + BLOCK - 1) / BLOCK, PARALLEL_MIN / BLOCK, run_blocks, &j);
    }
    *out = r;
    return TT_OK;
}
