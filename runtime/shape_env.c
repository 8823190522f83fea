/* The shape environment: symbolic sizes as hash-consed expression nodes.
 *
 * A symbolic tt_size is TT_SYM_BASE - index into `nodes`. Expressions are
 * built bottom-up by tt_sym_add & co.; constant operands fold, so concrete
 * arithmetic never allocates. Equal expressions get equal handles, which
 * makes "are these sizes equal" a handle comparison for the common cases.
 * Guards and constraint solving belong to the tracer; this file only
 * represents and prints. */
#include "tensor_impl.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef enum { SYM_SYMBOL, SYM_ADD, SYM_MUL, SYM_FLOORDIV, SYM_MOD } sym_kind;

typedef struct {
    sym_kind kind;
    tt_size a, b;  /* operands (expressions); unused for symbols */
    int64_t hint;  /* symbols: example value, -1 when unbacked */
    char name[16]; /* symbols */
} sym_node;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sym_node *nodes;
static int64_t nnodes, cap_nodes;
static int64_t *table; /* open addressing: node index + 1, 0 = empty */
static int64_t table_cap;
static int64_t counters[26];

static inline tt_size handle(int64_t idx) { return TT_SYM_BASE - idx; }
static inline int64_t index_of(tt_size s) { return TT_SYM_BASE - s; }

static uint64_t hash3(uint64_t k, uint64_t a, uint64_t b)
{
    uint64_t h = k * 0x9E3779B97F4A7C15ull ^ a;
    h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ull ^ b;
    return h ^ (h >> 29);
}

static bool grow(void)
{
    if (nnodes + 1 > cap_nodes) {
        int64_t nc = cap_nodes ? cap_nodes * 2 : 64;
        sym_node *n = tt__realloc(nodes, (size_t)cap_nodes * sizeof *n,
                                  (size_t)nc * sizeof *n);
        if (!n)
            return false;
        nodes = n;
        cap_nodes = nc;
    }
    if ((nnodes + 1) * 2 > table_cap) {
        int64_t nc = table_cap ? table_cap * 2 : 128;
        int64_t *t = tt__calloc((size_t)nc, sizeof *t);
        if (!t)
            return false;
        for (int64_t i = 0; i < nnodes; i++) {
            if (nodes[i].kind == SYM_SYMBOL)
                continue; /* symbols are never looked up by value */
            uint64_t h = hash3(nodes[i].kind, nodes[i].a, nodes[i].b);
            int64_t j = (int64_t)(h & (uint64_t)(nc - 1));
            while (t[j])
                j = (j + 1) & (nc - 1);
            t[j] = i + 1;
        }
        tt__free(table);
        table = t;
        table_cap = nc;
    }
    return true;
}

tt_size tt_sym_new(const char *prefix, int64_t hint)
{
    if (!prefix || prefix[0] < 'a' || prefix[0] > 'z' || prefix[1]) {
        tt_error(TT_EINVAL, "tt_sym_new: argument 'prefix' is %s%s%s; expected one "
                            "lowercase letter (\"s\" for a size, \"u\" for an unbacked one)",
                 prefix ? "'" : "NULL", prefix ? prefix : "", prefix ? "'" : "");
        return 0;
    }
    char p = prefix[0];
    pthread_mutex_lock(&lock);
    tt_size out = 0;
    if (grow()) {
        sym_node *n = &nodes[nnodes];
        memset(n, 0, sizeof *n);
        n->kind = SYM_SYMBOL;
        n->hint = hint < 0 ? -1 : hint;
        snprintf(n->name, sizeof n->name, "%c%lld", p,
                 (long long)counters[p - 'a']++);
        out = handle(nnodes++);
    }
    pthread_mutex_unlock(&lock);
    return out; /* 0 only after an allocation failure, with the error set */
}

/* The node (k, a, b) if it exists, else 0 (no handle is 0). Lock held. */
static tt_size find_locked(sym_kind k, tt_size a, tt_size b)
{
    if (!table_cap)
        return 0;
    uint64_t h = hash3(k, (uint64_t)a, (uint64_t)b);
    int64_t j = (int64_t)(h & (uint64_t)(table_cap - 1));
    while (table[j]) {
        sym_node *n = &nodes[table[j] - 1];
        if (n->kind == k && n->a == a && n->b == b)
            return handle(table[j] - 1);
        j = (j + 1) & (table_cap - 1);
    }
    return 0;
}

static tt_size intern(sym_kind k, tt_size a, tt_size b)
{
    pthread_mutex_lock(&lock);
    tt_size out = find_locked(k, a, b);
    if (!out && grow()) {
        nodes[nnodes] = (sym_node){.kind = k, .a = a, .b = b, .hint = 0};
        uint64_t h = hash3(k, (uint64_t)a, (uint64_t)b);
        int64_t j = (int64_t)(h & (uint64_t)(table_cap - 1));
        while (table[j])
            j = (j + 1) & (table_cap - 1);
        table[j] = nnodes + 1;
        out = handle(nnodes++);
    }
    pthread_mutex_unlock(&lock);
    return out;
}

/* Commutative operations list the symbolic operand first, then by handle,
 * so s0 + 4 and 4 + s0 are one node. */
static void order(tt_size *a, tt_size *b)
{
    if ((!tt_size_is_sym(*a) && tt_size_is_sym(*b)) ||
        (tt_size_is_sym(*a) && tt_size_is_sym(*b) && *a < *b)) {
        tt_size t = *a;
        *a = *b;
        *b = t;
    }
}

/* The arithmetic's errors return -1 (a plain negative number: no size and
 * no symbol) with TT_EINVAL set: an overflow, a division by zero, a
 * handle the environment never made (or forgot at tt_sym_reset). */
__attribute__((format(printf, 2, 3)))
static tt_size sym_fail(const char *fn, const char *fmt, ...)
{
    char why[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    tt_error(TT_EINVAL, "%s: %s", fn, why);
    return -1;
}

static bool valid(tt_size s)
{
    if (!tt_size_is_sym(s))
        return true;
    pthread_mutex_lock(&lock);
    bool ok = index_of(s) < nnodes;
    pthread_mutex_unlock(&lock);
    return ok;
}

/* Both operands are sizes or handles of this environment. */
static bool operands_ok(const char *fn, tt_size a, tt_size b)
{
    for (int i = 0; i < 2; i++)
        if (!valid(i ? b : a)) {
            sym_fail(fn, "argument '%s' (%lld) is not a symbolic size of the shape "
                         "environment (never made, or made before tt_sym_reset)",
                     i ? "b" : "a", (long long)(i ? b : a));
            return false;
        }
    return true;
}

/* A concrete result must stay above the symbol range: a value there would
 * read as a handle. */
static tt_size concrete(const char *fn, const char *op, tt_size a, tt_size b, bool overflow,
                        int64_t r)
{
    if (overflow || tt_size_is_sym(r))
        return sym_fail(fn, "%lld %s %lld overflows the range of sizes (|value| < 2^62)",
                        (long long)a, op, (long long)b);
    return r;
}

/* Python's (and sympy's FloorDiv / Mod, PyTorch's) rounding: toward minus
 * infinity, the remainder taking the divisor's sign. b != 0. */
static int64_t floordiv64(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static int64_t mod64(int64_t a, int64_t b)
{
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

tt_size tt_sym_add(tt_size a, tt_size b)
{
    int64_t r;
    if (!tt_size_is_sym(a) && !tt_size_is_sym(b)) {
        bool overflow = __builtin_add_overflow(a, b, &r);
        return concrete("tt_sym_add", "+", a, b, overflow, r);
    }
    if (!operands_ok("tt_sym_add", a, b))
        return -1;
    order(&a, &b);
    if (b == 0)
        return a;
    return intern(SYM_ADD, a, b);
}

tt_size tt_sym_sub(tt_size a, tt_size b)
{
    int64_t r;
    if (!tt_size_is_sym(a) && !tt_size_is_sym(b)) {
        bool overflow = __builtin_sub_overflow(a, b, &r);
        return concrete("tt_sym_sub", "-", a, b, overflow, r);
    }
    if (!operands_ok("tt_sym_sub", a, b))
        return -1;
    if (b == 0)
        return a;
    if (a == b)
        return 0;
    /* a - b is a + (-1)*b; a concrete negative b stays a plain constant. */
    if (!tt_size_is_sym(b))
        return intern(SYM_ADD, a, -b);
    tt_size neg = intern(SYM_MUL, b, -1);
    return neg ? tt_sym_add(a, neg) : 0; /* (a + 0 would hide the failure) */
}

tt_size tt_sym_mul(tt_size a, tt_size b)
{
    int64_t r;
    if (!tt_size_is_sym(a) && !tt_size_is_sym(b)) {
        bool overflow = __builtin_mul_overflow(a, b, &r);
        return concrete("tt_sym_mul", "*", a, b, overflow, r);
    }
    if (!operands_ok("tt_sym_mul", a, b))
        return -1;
    order(&a, &b);
    if (b == 1)
        return a;
    if (b == 0)
        return 0;
    return intern(SYM_MUL, a, b);
}

tt_size tt__sym_mul_find(tt_size a, tt_size b)
{
    tt_size p;
    if (!tt_size_is_sym(a) && !tt_size_is_sym(b))
        return __builtin_mul_overflow(a, b, &p) ? -1 : p; /* too big for any stride */
    order(&a, &b);
    if (b == 1)
        return a;
    if (b == 0)
        return 0;
    pthread_mutex_lock(&lock);
    tt_size out = find_locked(SYM_MUL, a, b);
    pthread_mutex_unlock(&lock);
    return out ? out : -1;
}

/* floordiv and mod: a by b, one function for both. */
static tt_size divide(const char *fn, sym_kind k, tt_size a, tt_size b)
{
    const char *op = k == SYM_MOD ? "%" : "//";
    if (b == 0) {
        char as[64];
        tt_size_str(a, as, sizeof as);
        return sym_fail(fn, "division by zero (%s %s 0)", as, op);
    }
    if (!tt_size_is_sym(a) && !tt_size_is_sym(b))
        return k == SYM_MOD ? mod64(a, b) : floordiv64(a, b);
    if (!operands_ok(fn, a, b))
        return -1;
    if (b == 1)
        return k == SYM_MOD ? 0 : a;
    return intern(k, a, b);
}

tt_size tt_sym_floordiv(tt_size a, tt_size b)
{
    return divide("tt_sym_floordiv", SYM_FLOORDIV, a, b);
}

tt_size tt_sym_mod(tt_size a, tt_size b) { return divide("tt_sym_mod", SYM_MOD, a, b); }

static bool node_of(tt_size s, sym_node *out)
{
    pthread_mutex_lock(&lock);
    int64_t i = index_of(s);
    bool ok = i >= 0 && i < nnodes;
    if (ok)
        *out = nodes[i];
    pthread_mutex_unlock(&lock);
    return ok;
}

/* The example value of s; false when s contains an unbacked symbol. The
 * value itself may be negative (s1 - s0), so unbackedness travels apart. */
static bool hint_of(tt_size s, int64_t *out)
{
    if (!tt_size_is_sym(s)) {
        *out = s;
        return true;
    }
    sym_node n;
    if (!node_of(s, &n))
        return false;
    if (n.kind == SYM_SYMBOL) {
        *out = n.hint;
        return n.hint >= 0;
    }
    int64_t a, b;
    if (!hint_of(n.a, &a) || !hint_of(n.b, &b))
        return false;
    switch (n.kind) {
    case SYM_ADD: *out = a + b; return true;
    case SYM_MUL: *out = a * b; return true;
    case SYM_FLOORDIV: *out = b ? floordiv64(a, b) : 0; return b != 0;
    case SYM_MOD: *out = b ? mod64(a, b) : 0; return b != 0;
    default: return false;
    }
}

int64_t tt_sym_hint(tt_size s)
{
    int64_t v;
    return hint_of(s, &v) ? v : -1;
}

/* Appends to buf at *len, tracking the length needed as snprintf does. */
static void put(char *buf, size_t n, int *len, const char *s)
{
    size_t l = strlen(s);
    if ((size_t)*len < n)
        snprintf(buf + *len, n - (size_t)*len, "%s", s);
    *len += (int)l;
}

static void print(tt_size s, char *buf, size_t n, int *len, int prec)
{
    char tmp[32];
    if (!tt_size_is_sym(s)) {
        snprintf(tmp, sizeof tmp, "%lld", (long long)s);
        put(buf, n, len, tmp);
        return;
    }
    sym_node nd;
    if (!node_of(s, &nd)) {
        put(buf, n, len, "?");
        return;
    }
    switch (nd.kind) {
    case SYM_SYMBOL: put(buf, n, len, nd.name); break;
    case SYM_ADD:
        if (prec > 1)
            put(buf, n, len, "(");
        print(nd.a, buf, n, len, 1);
        if (!tt_size_is_sym(nd.b) && nd.b < 0) {
            snprintf(tmp, sizeof tmp, " - %lld", -(long long)nd.b);
            put(buf, n, len, tmp);
        } else {
            put(buf, n, len, " + ");
            print(nd.b, buf, n, len, 1);
        }
        if (prec > 1)
            put(buf, n, len, ")");
        break;
    case SYM_MUL:
        if (nd.b == -1) {
            put(buf, n, len, "-");
            print(nd.a, buf, n, len, 2);
            break;
        }
        print(nd.a, buf, n, len, 2);
        put(buf, n, len, "*");
        print(nd.b, buf, n, len, 2);
        break;
    case SYM_FLOORDIV:
    case SYM_MOD:
        put(buf, n, len, "(");
        print(nd.a, buf, n, len, 2);
        put(buf, n, len, nd.kind == SYM_FLOORDIV ? "//" : "%");
        print(nd.b, buf, n, len, 2);
        put(buf, n, len, ")");
        break;
    }
}

int tt_size_str(tt_size s, char *buf, size_t n)
{
    int len = 0;
    if (n)
        buf[0] = '\0';
    print(s, buf, n, &len, 0);
    return len;
}

void tt_sym_reset(void)
{
    pthread_mutex_lock(&lock);
    tt__free(nodes);
    tt__free(table);
    nodes = NULL;
    table = NULL;
    nnodes = cap_nodes = table_cap = 0;
    memset(counters, 0, sizeof counters);
    pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------ evaluation and guards */

/* The value of s with symbols bound to values (syms[i] -> vals[i]); false
 * when a symbol is unbound or a division by zero occurs. */
static bool eval_of(tt_size s, int n, const tt_size *syms, const int64_t *vals, int64_t *out)
{
    if (!tt_size_is_sym(s)) {
        *out = s;
        return true;
    }
    for (int i = 0; i < n; i++)
        if (syms[i] == s) {
            *out = vals[i];
            return true;
        }
    sym_node nd;
    if (!node_of(s, &nd) || nd.kind == SYM_SYMBOL)
        return false;
    int64_t a, b;
    if (!eval_of(nd.a, n, syms, vals, &a) || !eval_of(nd.b, n, syms, vals, &b))
        return false;
    switch (nd.kind) {
    case SYM_ADD: *out = a + b; return true;
    case SYM_MUL: *out = a * b; return true;
    case SYM_FLOORDIV: *out = b ? floordiv64(a, b) : 0; return b != 0;
    case SYM_MOD: *out = b ? mod64(a, b) : 0; return b != 0;
    default: return false;
    }
}

bool tt_sym_eval(tt_size s, int n, const tt_size *syms, const int64_t *vals, int64_t *out)
{
    return eval_of(s, n, syms, vals, out);
}

static _Thread_local void (*guard_hook)(void *ud, tt_guard_op op, tt_size a, tt_size b,
                                        bool result);
static _Thread_local void *guard_ud;

void tt_sym_set_guard_hook(void (*hook)(void *ud, tt_guard_op op, tt_size a, tt_size b,
                                        bool result),
                           void *ud)
{
    guard_hook = hook;
    guard_ud = ud;
}

/* Decides a comparison on the example values; when a symbol is involved
 * the outcome is recorded as a guard, since it holds only for inputs whose
 * sizes make it hold. */
static bool decide(tt_guard_op op, tt_size a, tt_size b)
{
    bool sym = tt_size_is_sym(a) || tt_size_is_sym(b);
    int64_t x = 0, y = 0;
    /* Both hints are always computed (no short-circuit): x and y are read below. */
    bool known_a = hint_of(a, &x), known_b = hint_of(b, &y);
    bool known = known_a && known_b;
    bool r;
    if (!known) /* unbacked: only identical expressions are known equal */
        r = op == TT_GUARD_EQ ? a == b : op == TT_GUARD_LE ? a == b : false;
    else
        r = op == TT_GUARD_EQ ? x == y : op == TT_GUARD_LT ? x < y : x <= y;
    if (sym && guard_hook && !(op == TT_GUARD_EQ && a == b))
        guard_hook(guard_ud, op, a, b, r);
    return r;
}

bool tt_size_eq(tt_size a, tt_size b) { return a == b || decide(TT_GUARD_EQ, a, b); }
bool tt_size_lt(tt_size a, tt_size b) { return decide(TT_GUARD_LT, a, b); }
bool tt_size_le(tt_size a, tt_size b) { return a == b || decide(TT_GUARD_LE, a, b); }

int64_t tt_size_int(tt_size s)
{
    if (!tt_size_is_sym(s))
        return s;
    int64_t v = tt_sym_hint(s);
    if (guard_hook)
        guard_hook(guard_ud, TT_GUARD_EQ, s, v, true);
    return v;
}
