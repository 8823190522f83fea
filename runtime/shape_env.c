/* The shape environment: symbolic sizes as hash-consed expression nodes.
 *
 * A symbolic tt_size is a handle at or below TT_SYM_BASE that encodes the
 * index of its node (see "Handles" below). Expressions are built bottom-up
 * by tt_sym_add & co.; constant operands fold, so concrete arithmetic never
 * allocates. Equal expressions get equal handles, which makes "are these
 * sizes equal" a handle comparison for the common cases. Guards are
 * recorded through the tracer's hook; this file represents, prints,
 * evaluates and compares. */
#include "tensor_impl.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* SYM_HOLE: an index whose handle was refused (see new_index); it is
 * never handed out, so it never validates. */
typedef enum { SYM_SYMBOL, SYM_ADD, SYM_MUL, SYM_FLOORDIV, SYM_MOD, SYM_HOLE } sym_kind;

typedef struct {
    sym_kind kind;
    tt_size a, b;  /* operands (expressions); unused for symbols */
    int64_t hint;  /* symbols: example value, -1 when unbacked */
    int64_t lo, hi; /* unbacked symbols: the bounds the fake kernel stated */
    char name[16]; /* symbols */
} sym_node;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sym_node *nodes;
static int64_t nnodes, cap_nodes;
static int64_t *table; /* open addressing: node index + 1, 0 = empty */
static int64_t table_cap;
static int64_t counters[26];

/* ---------------------------------------------------------------- Handles
 *
 * C cannot overload arithmetic, so `H - 1` on a handle H is plain integer
 * arithmetic. With consecutive handles it landed on another valid handle
 * (a wrong size that traced and replayed silently). So a handle is
 * self-checking: TT_SYM_BASE - d with
 *
 *     d = spread(index) << CHECK_BITS | check(index)
 *
 * where spread is an odd multiplier modulo 2^46 (consecutive indices land
 * far apart, and it inverts exactly) and check is a hash of the index in
 * [2^14, 3 * 2^14). Then:
 *  - H + k and H - k for 0 < |k| < 2^14 keep the index and change the
 *    check bits: never a handle;
 *  - H * k and H / k for 2 <= k <= 64 are refused at allocation time when
 *    they would read as a concrete size (|v| < TT_SIZE_LIMIT) or as a
 *    well-formed handle (new_index skips such an index), so they are
 *    always "no size";
 *  - H - W, H + W and H * W of a new symbol and each of the 16 symbols
 *    made before it are refused the same way (apart_from_recent);
 *  - other arithmetic gives a value that is a size or a handle with
 *    probability about 2^-16 (the handles spread over 2^62).
 * Validating costs a multiply and a compare, and only values already in
 * the symbolic range (or beyond TT_SIZE_LIMIT) pay it. */
#define CHECK_BITS 16
#define SPREAD_BITS 46 /* CHECK_BITS + SPREAD_BITS = 62: d < 2^62 */
#define SPREAD_MASK ((UINT64_C(1) << SPREAD_BITS) - 1)
/* Odd, near 2^46 / golden ratio, so small differences of indices spread. */
#define SPREAD_MUL UINT64_C(0x278DDE6E5FD3)

static uint64_t spread_inv; /* SPREAD_MUL^-1 mod 2^46, computed once */
static pthread_once_t inv_once = PTHREAD_ONCE_INIT;

static void compute_inv(void)
{
    /* Newton's iteration doubles the correct low bits of an inverse. */
    uint64_t x = SPREAD_MUL; /* correct to 3 bits: a * a == 1 mod 8 for odd a */
    for (int i = 0; i < 6; i++)
        x *= 2 - SPREAD_MUL * x;
    spread_inv = x & SPREAD_MASK;
}

static uint64_t check_of(uint64_t idx)
{
    uint64_t h = idx * UINT64_C(0x9E3779B97F4A7C15);
    h ^= h >> 29;
    h *= UINT64_C(0xBF58476D1CE4E5B9);
    return (UINT64_C(1) << (CHECK_BITS - 2)) + ((h >> 40) & ((UINT64_C(1) << (CHECK_BITS - 1)) - 1));
}

static tt_size encode(int64_t idx)
{
    /* idx + 1: index 0 would spread to 0, a handle next to TT_SYM_BASE
     * whose small multiples read as sizes. */
    uint64_t d = (((uint64_t)(idx + 1) * SPREAD_MUL) & SPREAD_MASK) << CHECK_BITS |
                 check_of((uint64_t)idx);
    return (tt_size)((uint64_t)TT_SYM_BASE - d);
}

/* The index a value in the symbolic range encodes, or -1 when it is not
 * well formed (no handle ever has this value). */
static int64_t decode(tt_size s)
{
    if (!tt_size_is_sym(s))
        return -1;
    uint64_t d = (uint64_t)TT_SYM_BASE - (uint64_t)s; /* in [0, 2^62] */
    uint64_t hi = d >> CHECK_BITS;
    if (hi > SPREAD_MASK)
        return -1;
    pthread_once(&inv_once, compute_inv);
    uint64_t idx = ((hi * spread_inv) - 1) & SPREAD_MASK;
    return (d & ((UINT64_C(1) << CHECK_BITS) - 1)) == check_of(idx) ? (int64_t)idx : -1;
}

static inline tt_size handle(int64_t idx) { return encode(idx); }
/* The node index of a handle; -1 for a value that is no live handle. Lock held. */
static int64_t index_of(tt_size s)
{
    int64_t i = decode(s);
    return i >= 0 && i < nnodes && nodes[i].kind != SYM_HOLE ? i : -1;
}

/* True when v reads as a concrete size or a well-formed handle: a product
 * or quotient of a handle by a small constant must be neither. */
static bool reads_as_size(tt_size v)
{
    return (v > -TT_SIZE_LIMIT && v < TT_SIZE_LIMIT) || decode(v) >= 0;
}

static bool acceptable(int64_t idx)
{
    tt_size h = encode(idx);
    for (int64_t k = 2; k <= 64; k++)
        if (reads_as_size((tt_size)((uint64_t)h * (uint64_t)k)) || reads_as_size(h / k))
            return false;
    return true;
}

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
            if (nodes[i].kind == SYM_SYMBOL || nodes[i].kind == SYM_HOLE)
                continue; /* never looked up by value */
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

/* The last symbols made: a new symbol's handle also keeps H - W, H + W
 * and H * W with each of them from reading as a size (the conv output
 * size H - K + 1, an im2col stride H * W, written in C on two input
 * sizes). Lock held. */
#define RECENT_SYMBOLS 16
static tt_size recent[RECENT_SYMBOLS];
static int nrecent;

static bool apart_from_recent(tt_size h)
{
    for (int i = 0; i < nrecent && i < RECENT_SYMBOLS; i++) {
        uint64_t a = (uint64_t)h, b = (uint64_t)recent[i];
        if (reads_as_size((tt_size)(a - b)) || reads_as_size((tt_size)(b - a)) ||
            reads_as_size((tt_size)(a + b)) || reads_as_size((tt_size)(a * b)))
            return false;
    }
    return true;
}

/* The index of a new node, skipping (as holes) the indices whose handles
 * the rules above refuse; -1 when out of memory. Lock held. */
static int64_t new_index(bool symbol)
{
    for (;;) {
        if (!grow())
            return -1;
        if (acceptable(nnodes) && (!symbol || apart_from_recent(encode(nnodes))))
            return nnodes;
        nodes[nnodes] = (sym_node){.kind = SYM_HOLE};
        nnodes++;
    }
}

tt_size tt_sym_new(const char *prefix, int64_t hint)
{
    if (!prefix || prefix[0] < 'a' || prefix[0] > 'z' || prefix[1]) {
        tt_error(TT_EINVAL, "tt_sym_new: argument 'prefix' is %s%s%s; expected one "
                            "lowercase letter (\"s\" for a size, \"u\" for an unbacked one)",
                 prefix ? "'" : "NULL", prefix ? prefix : "", prefix ? "'" : "");
        return 0;
    }
    if (hint >= TT_SIZE_LIMIT) {
        tt_error(TT_EINVAL, "tt_sym_new: argument 'hint' is %lld; sizes are below 2^48",
                 (long long)hint);
        return 0;
    }
    char p = prefix[0];
    pthread_mutex_lock(&lock);
    tt_size out = 0;
    int64_t i = new_index(true);
    if (i >= 0) {
        sym_node *n = &nodes[i];
        memset(n, 0, sizeof *n);
        n->kind = SYM_SYMBOL;
        n->hint = hint < 0 ? -1 : hint;
        n->lo = 0;
        n->hi = TT_SIZE_LIMIT - 1;
        snprintf(n->name, sizeof n->name, "%c%lld", p,
                 (long long)counters[p - 'a']++);
        out = handle(nnodes++);
        recent[nrecent++ % RECENT_SYMBOLS] = out;
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
    if (!out && new_index(false) >= 0) {
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

/* Commutative operations list the symbolic operand first, then the older
 * node, so s0 + 4 and 4 + s0 are one node and s0*s1 prints in that order. */
static void order(tt_size *a, tt_size *b)
{
    if ((!tt_size_is_sym(*a) && tt_size_is_sym(*b)) ||
        (tt_size_is_sym(*a) && tt_size_is_sym(*b) && decode(*a) > decode(*b))) {
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
    char why[800];
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
    bool ok = index_of(s) >= 0;
    pthread_mutex_unlock(&lock);
    return ok;
}

bool tt__sym_valid(tt_size s) { return valid(s); }

/* The sentence explaining a value that is neither a size nor a handle. */
static const char *why_not_a_size(tt_size s)
{
    if (tt_size_is_sym(s))
        return "is not a symbolic size of the shape environment (never made, made before "
               "tt_sym_reset, or the result of C arithmetic on a symbolic size)";
    return "is no size: sizes, strides and offsets are below 2^48 in magnitude";
}

#define ARITH_HINT                                                                   \
    "C arithmetic (+, -, *, /) on a symbolic size is the likely cause: a symbolic "   \
    "size is a handle, not a number; compute with tt_sym_add, tt_sym_sub, "           \
    "tt_sym_mul and tt_sym_floordiv (tt_sym_sub(tt_dim_size(x, 0), 1) for "           \
    "tt_dim_size(x, 0) - 1)"

tt_status tt__size_refuse(const char *fn, const char *arg, int index, tt_size s)
{
    if (index >= 0)
        return tt_error(TT_EINVAL, "%s: argument '%s' has %lld at index %d, which %s. %s",
                        fn, arg, (long long)s, index, why_not_a_size(s), ARITH_HINT);
    return tt_error(TT_EINVAL, "%s: argument '%s' is %lld, which %s. %s", fn, arg,
                    (long long)s, why_not_a_size(s), ARITH_HINT);
}

tt_status tt__size_check(const char *fn, const char *arg, int index, tt_size s)
{
    if (!tt__size_odd(s) || (tt_size_is_sym(s) && valid(s)))
        return TT_OK;
    return tt__size_refuse(fn, arg, index, s);
}

tt_status tt__sizes_check(const char *fn, const char *arg, int n, const tt_size *v)
{
    for (int i = 0; i < n; i++)
        if (tt__size_odd(v[i]) && tt__size_check(fn, arg, i, v[i]))
            return tt_errcode();
    return TT_OK;
}

/* Both operands are sizes or handles of this environment. */
static bool operands_ok(const char *fn, tt_size a, tt_size b)
{
    for (int i = 0; i < 2; i++)
        if (!valid(i ? b : a)) {
            sym_fail(fn, "argument '%s' (%lld) %s. %s", i ? "b" : "a",
                     (long long)(i ? b : a), why_not_a_size(i ? b : a), ARITH_HINT);
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
    bool ok = i >= 0;
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
    case SYM_HOLE: put(buf, n, len, "?"); break; /* (node_of never gives one) */
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
    nrecent = 0;
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
static _Thread_local void (*undecided_hook)(void *ud, const char *expr, tt_srcloc loc);
static _Thread_local void *undecided_ud;

void tt_sym_set_guard_hook(void (*hook)(void *ud, tt_guard_op op, tt_size a, tt_size b,
                                        bool result),
                           void *ud)
{
    guard_hook = hook;
    guard_ud = ud;
}

void tt_sym_set_undecided_hook(void (*hook)(void *ud, const char *expr, tt_srcloc loc),
                               void *ud)
{
    undecided_hook = hook;
    undecided_ud = ud;
}

void tt__sym_get_undecided_hook(void (**hook)(void *ud, const char *expr, tt_srcloc loc),
                                void **ud)
{
    *hook = undecided_hook;
    *ud = undecided_ud;
}

tt_size tt__sym_new_unbacked(int64_t lo, int64_t hi)
{
    tt_size u = tt_sym_new("u", -1);
    if (!u)
        return 0;
    pthread_mutex_lock(&lock);
    int64_t i = index_of(u);
    if (i >= 0) { /* (a tt_sym_reset on another thread may have dropped it) */
        nodes[i].lo = lo;
        nodes[i].hi = hi;
    }
    pthread_mutex_unlock(&lock);
    return u;
}

/* ---------------------------------------------------------- value ranges */

/* What is known of a size without a guard: an interval, saturated at
 * +-2^62 (beyond every size). Concrete values are points; an unbacked
 * symbol has its stated bounds (default [0, 2^48)); a backed one is an
 * input size, >= 2 (0 and 1 are specialized, as PyTorch does). */
#define RANGE_MAX ((int64_t)1 << 62)

typedef struct {
    int64_t lo, hi;
} range;

static int64_t sat(__int128 v)
{
    return v > RANGE_MAX ? RANGE_MAX : v < -RANGE_MAX ? -RANGE_MAX : (int64_t)v;
}

static range range_of(tt_size s)
{
    if (!tt_size_is_sym(s))
        return (range){s, s};
    sym_node n;
    if (!node_of(s, &n))
        return (range){-RANGE_MAX, RANGE_MAX};
    if (n.kind == SYM_SYMBOL)
        return n.hint >= 0 ? (range){2, TT_SIZE_LIMIT - 1} : (range){n.lo, n.hi};
    range a = range_of(n.a), b = range_of(n.b);
    switch (n.kind) {
    case SYM_ADD: return (range){sat((__int128)a.lo + b.lo), sat((__int128)a.hi + b.hi)};
    case SYM_MUL: {
        __int128 p[4] = {(__int128)a.lo * b.lo, (__int128)a.lo * b.hi, (__int128)a.hi * b.lo,
                         (__int128)a.hi * b.hi};
        __int128 lo = p[0], hi = p[0];
        for (int i = 1; i < 4; i++) {
            lo = p[i] < lo ? p[i] : lo;
            hi = p[i] > hi ? p[i] : hi;
        }
        return (range){sat(lo), sat(hi)};
    }
    case SYM_FLOORDIV:
        if (b.lo == b.hi && b.lo > 0) /* monotone in a */
            return (range){floordiv64(a.lo, b.lo), floordiv64(a.hi, b.lo)};
        break;
    case SYM_MOD:
        if (b.lo == b.hi && b.lo > 0)
            return (range){0, b.lo - 1};
        break;
    default: break;
    }
    return (range){-RANGE_MAX, RANGE_MAX};
}

/* The comparison decided by ranges alone: 1 true, 0 false, -1 unknown. */
static int by_ranges(tt_guard_op op, tt_size a, tt_size b)
{
    range x = range_of(a), y = range_of(b);
    switch (op) {
    case TT_GUARD_EQ:
        if (x.hi < y.lo || y.hi < x.lo)
            return 0;
        return x.lo == x.hi && y.lo == y.hi && x.lo == y.lo ? 1 : -1;
    case TT_GUARD_LT: return x.hi < y.lo ? 1 : x.lo >= y.hi ? 0 : -1;
    case TT_GUARD_LE: return x.hi <= y.lo ? 1 : x.lo > y.hi ? 0 : -1;
    }
    return -1;
}

/* A comparison nobody can answer: the tracer's hook makes it a graph
 * break at the caller's line (the innermost call made from the user's
 * code when the comparison is inside the library's kernels). */
static void undecided(const char *expr, tt_srcloc loc)
{
    if (undecided_hook) {
        undecided_hook(undecided_ud, expr, loc);
        return;
    }
    tt_error(TT_EINVAL, "Could not guard on data-dependent expression %s (at %s:%d in %s()): "
                        "a data-dependent size (an unbacked symbol from "
                        "tt_frame_new_dynamic_size) has no value until the real kernel runs; "
                        "state its bounds with tt_frame_new_dynamic_size_bounded so the "
                        "comparison is decided, or compare real sizes",
             expr, loc.file ? loc.file : "?", loc.line, loc.func ? loc.func : "?");
}

static const char *const op_text[] = {"==", "<", "<="};

/* Decides a comparison. With symbols involved: on the example values when
 * every symbol has one (recording the outcome as a guard, since it holds
 * only for inputs whose sizes make it hold); else by the value ranges
 * (no guard needed); else it is undecided (see undecided()). */
static bool decide(tt_guard_op op, tt_size a, tt_size b, tt_srcloc loc)
{
    if (!tt_size_is_sym(a) && !tt_size_is_sym(b))
        return op == TT_GUARD_EQ ? a == b : op == TT_GUARD_LT ? a < b : a <= b;
    if (a == b) /* the same expression: known without a guard */
        return op != TT_GUARD_LT;
    int64_t x = 0, y = 0;
    /* Both hints are always computed (no short-circuit): x and y are read below. */
    bool known_a = hint_of(a, &x), known_b = hint_of(b, &y);
    if (known_a && known_b) {
        bool r = op == TT_GUARD_EQ ? x == y : op == TT_GUARD_LT ? x < y : x <= y;
        if (guard_hook)
            guard_hook(guard_ud, op, a, b, r);
        return r;
    }
    int r = by_ranges(op, a, b);
    if (r >= 0)
        return r;
    char as[128], bs[128], expr[300];
    tt_size_str(a, as, sizeof as);
    tt_size_str(b, bs, sizeof bs);
    snprintf(expr, sizeof expr, "%s %s %s", as, op_text[op], bs);
    undecided(expr, loc);
    return false;
}

static const tt_srcloc no_loc = {NULL, 0, NULL};

bool tt_size_eq_at(tt_size a, tt_size b, tt_srcloc loc)
{
    return a == b || decide(TT_GUARD_EQ, a, b, loc);
}
bool tt_size_lt_at(tt_size a, tt_size b, tt_srcloc loc) { return decide(TT_GUARD_LT, a, b, loc); }
bool tt_size_le_at(tt_size a, tt_size b, tt_srcloc loc)
{
    return a == b || decide(TT_GUARD_LE, a, b, loc);
}

int64_t tt_size_int_at(tt_size s, tt_srcloc loc)
{
    if (!tt_size_is_sym(s))
        return s;
    int64_t v;
    if (hint_of(s, &v)) {
        if (guard_hook)
            guard_hook(guard_ud, TT_GUARD_EQ, s, v, true);
        return v;
    }
    range r = range_of(s);
    if (r.lo == r.hi)
        return r.lo;
    char e[128], expr[160];
    tt_size_str(s, e, sizeof e);
    snprintf(expr, sizeof expr, "int(%s)", e);
    undecided(expr, loc);
    return -1;
}

/* The functions behind the macros, for callers that cannot be macros. */
bool(tt_size_eq)(tt_size a, tt_size b) { return tt_size_eq_at(a, b, no_loc); }
bool(tt_size_lt)(tt_size a, tt_size b) { return tt_size_lt_at(a, b, no_loc); }
bool(tt_size_le)(tt_size a, tt_size b) { return tt_size_le_at(a, b, no_loc); }
int64_t(tt_size_int)(tt_size s) { return tt_size_int_at(s, no_loc); }
