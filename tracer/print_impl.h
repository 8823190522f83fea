/* Internal to tracer/: the growable string and the value printers that
 * the text printer (graph.c) and the DOT printer (dot.c) share, so both
 * spell arguments, constants and dtype/shape the same way. */
#ifndef TT_PRINT_IMPL_H
#define TT_PRINT_IMPL_H

#include "graph_impl.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* A growable string (freed by the caller with free()). */
typedef struct {
    char *s;
    size_t len, cap;
    bool oom;
} sbuf;

static inline void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t nc = (b->cap ? b->cap * 2 : 256) + (size_t)n;
        /* libc's realloc (the caller frees the text with free()), counted
         * by the allocator hook so out-of-memory injection reaches it. */
        char *ns = tt__alloc_request(nc) ? realloc(b->s, nc) : NULL;
        if (!ns) {
            b->oom = true;
            return;
        }
        b->s = ns;
        b->cap = nc;
    }
}

static inline void print_ref(sbuf *b, const tt_graph *g, gref r)
{
    const gnode *n = &g->nodes[r.node];
    if (n->nvals > 1 || n->rlen) /* rlen: the elements of a list, even of one */
        sb_printf(b, "%s[%d]", n->name, r.out);
    else
        sb_printf(b, "%s", n->name);
}

/* The shortest decimal text that reads back as the same double, so a
 * graph prints alpha=-0.1 rather than -0.10000000000000001. */
static inline const char *fmt_double(double v, char *buf)
{
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

static inline void print_const(sbuf *b, const tt_value *v)
{
    switch (v->kind) {
    case TT_V_NONE: sb_printf(b, "None"); break;
    case TT_V_INT: { /* a SymInt or Scalar may hold a symbolic size */
        char one[64];
        tt_size_str(v->u.i, one, sizeof one);
        sb_printf(b, "%s", one);
        break;
    }
    case TT_V_FLOAT: {
        char num[32];
        sb_printf(b, "%s", fmt_double(v->u.f, num));
        break;
    }
    case TT_V_BOOL: sb_printf(b, v->u.b ? "True" : "False"); break;
    case TT_V_STR: sb_printf(b, "\"%s\"", v->u.s); break;
    case TT_V_DTYPE: sb_printf(b, "%s", tt_dtype_name(v->u.dtype)); break;
    case TT_V_DEVICE: sb_printf(b, "%s", tt_device_name(v->u.device)); break;
    case TT_V_INTS:
        sb_printf(b, "[");
        for (int i = 0; i < v->n; i++) {
            char one[64];
            tt_size_str(v->u.ints[i], one, sizeof one);
            sb_printf(b, "%s%s", i ? ", " : "", one);
        }
        sb_printf(b, "]");
        break;
    case TT_V_FLOATS:
        sb_printf(b, "[");
        for (int i = 0; i < v->n; i++)
        {
            char num[32];
            sb_printf(b, "%s%s", i ? ", " : "", fmt_double(v->u.floats[i], num));
        }
        sb_printf(b, "]");
        break;
    case TT_V_BOOLS:
        sb_printf(b, "[");
        for (int i = 0; i < v->n; i++)
            sb_printf(b, "%s%s", i ? ", " : "", v->u.bools[i] ? "True" : "False");
        sb_printf(b, "]");
        break;
    default: sb_printf(b, "?"); break;
    }
}

static inline bool same_value(const tt_value *a, const tt_value *b)
{
    if (a->kind != b->kind || a->n != b->n)
        return false;
    switch (a->kind) {
    case TT_V_NONE: return true;
    case TT_V_INT: return a->u.i == b->u.i;
    case TT_V_FLOAT: return a->u.f == b->u.f;
    case TT_V_BOOL: return a->u.b == b->u.b;
    case TT_V_STR: return strcmp(a->u.s, b->u.s) == 0;
    case TT_V_DTYPE: return a->u.dtype == b->u.dtype;
    case TT_V_DEVICE: return a->u.device == b->u.device;
    case TT_V_INTS: return !a->n || memcmp(a->u.ints, b->u.ints, sizeof(int64_t) * (size_t)a->n) == 0;
    case TT_V_FLOATS: return !a->n || memcmp(a->u.floats, b->u.floats, sizeof(double) * (size_t)a->n) == 0;
    case TT_V_BOOLS: return !a->n || memcmp(a->u.bools, b->u.bools, sizeof(bool) * (size_t)a->n) == 0;
    default: return false;
    }
}

/* The file's base name: __FILE__ depends on where the build ran, and
 * printed graphs stay the same wherever it did. */
static inline const char *loc_basename(const char *path)
{
    const char *base = strrchr(path, '/');
    return base ? base + 1 : path;
}

/* A node's source line, "model.c:12 in mlp" (loc.file not NULL). */
static inline void print_loc(sbuf *b, tt_srcloc loc)
{
    sb_printf(b, "%s:%d", loc_basename(loc.file), loc.line);
    if (loc.func)
        sb_printf(b, " in %s", loc.func);
}

static inline void print_type(sbuf *b, const tt_tensor *t)
{
    char shape[256];
    if (!t) {
        sb_printf(b, "None");
        return;
    }
    sb_printf(b, "%s%s", tt_dtype_name(tt_dtype_of(t)), tt_shape_str(t, shape, sizeof shape));
}

/* The type of op node n's output j: its tensor's, or for a number result
 * (tt::sym_size.int -> SymInt, a custom op's -> float) the schema's type,
 * since the graph keeps tensors only. */
static inline void print_out_type(sbuf *b, const gnode *n, int j)
{
    static const char *const names[] = {[TT_T_INT] = "int", [TT_T_SYMINT] = "SymInt",
                                        [TT_T_FLOAT] = "float", [TT_T_BOOL] = "bool",
                                        [TT_T_SCALAR] = "Scalar"};
    const tt_schema *s = !n->vals[j] && !n->rlen && n->op ? tt_op_schema(n->op) : NULL;
    if (s && j < tt_schema_nreturns(s)) {
        const tt_type *ty = &tt_schema_return(s, j)->type;
        if (!ty->is_list && (unsigned)ty->base < sizeof names / sizeof names[0] &&
            names[ty->base]) {
            sb_printf(b, "%s", names[ty->base]);
            return;
        }
    }
    print_type(b, n->vals[j]);
}

#endif
