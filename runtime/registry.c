/* The op registry: libraries, op definitions and kernel registrations.
 *
 * An op is a handle (tt_op, what users keep) and its current definition
 * (tt_opdef: schema, kernel table, autograd registration). Handles are one
 * per name and never freed: users keep plain pointers (from tt_op_find,
 * tt_custom_op_define, graph nodes) and the registry cannot know when the
 * last copy is gone, so a handle is the small tombstone a freed op leaves
 * (its name and a few words), and a call through it fails with a message
 * naming the op instead of touching freed memory. Defining the name again
 * gives the same handle a new definition, so cached handles work again and
 * a program that defines and frees the same ops in a loop stays the same
 * size. Lookups go through a hash of the names, so tombstones of other
 * names do not slow them.
 *
 * Definitions are reclaimed: freeing a library retires its ops'
 * definitions (the handle's def becomes NULL) and a retired definition is
 * freed once no call pins it. A call of a user's op pins the handle (a
 * counter), then reads its definition; a definition retired while calls
 * run waits in the handle's retired list until the counter drops to zero,
 * so a call racing with the free runs to its end on what it read, or, if it
 * came after, fails cleanly. Built-ins (namespace tt) are defined once and
 * never freed, so their calls pin nothing. tt_library_free does not wait
 * for calls in flight: a kernel of a freed op may still be running when it
 * returns (as in PyTorch, whose dispatcher does not wait either).
 *
 * Registration takes a write lock; look-ups take a read lock; calls read
 * the pinned definition's atomic kernel slots without locking. */
#include "dispatch_impl.h"
#include "schema_impl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h> /* qsort */
#include <string.h>

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
/* Every handle ever made, and an open-addressing hash of them by name
 * (load at most one half; handles are never removed). */
static tt_op **ops;
static int nops, cap_ops;
static tt_op **index_slots;
static size_t index_cap;
static atomic_long ndefs; /* definitions alive: current or retired but pinned */
static tt_library **libs;
static int nlibs, cap_libs, next_lib_id = 1;

/* ------------------------------------------------------------- helpers */

static bool is_ident(const char *s)
{
    if (!s || !*s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

static const char *kind_name(tt_library_kind k)
{
    return k == TT_LIB_DEF ? "DEF" : k == TT_LIB_FRAGMENT ? "FRAGMENT" : "IMPL";
}

static size_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

/* Caller holds the lock. */
static tt_op *find_locked(const char *name)
{
    if (!index_cap)
        return NULL;
    for (size_t i = name_hash(name) & (index_cap - 1);; i = (i + 1) & (index_cap - 1))
        if (!index_slots[i] || strcmp(index_slots[i]->name, name) == 0)
            return index_slots[i];
}

static void index_put(tt_op **slots, size_t cap, tt_op *op)
{
    size_t i = name_hash(op->name) & (cap - 1);
    while (slots[i])
        i = (i + 1) & (cap - 1);
    slots[i] = op;
}

/* Makes room in the index for one more handle. Caller holds the write lock. */
static bool index_reserve(void)
{
    if ((size_t)(nops + 1) * 2 <= index_cap)
        return true;
    size_t cap = index_cap ? index_cap * 2 : 1024;
    tt_op **slots = tt__calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    for (int i = 0; i < nops; i++)
        index_put(slots, cap, ops[i]);
    tt__free(index_slots);
    index_slots = slots;
    index_cap = cap;
    return true;
}

static bool push_ptr(void ***arr, int *n, int *cap, void *p)
{
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        void **na = tt__realloc(*arr, (size_t)*cap * sizeof *na, (size_t)nc * sizeof *na);
        if (!na)
            return false;
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*n)++] = p;
    return true;
}

const char *tt__arg_type_str(const tt_opdef *op, int i, char *buf, size_t n)
{
    const tt_arg *a = op->schema ? tt_schema_arg(op->schema, i) : NULL;
    if (!a) {
        snprintf(buf, n, "?");
        return buf;
    }
    return tt_type_str(&a->type, buf, n);
}

/* ----------------------------------------------------------------- pins */

static void reclaim(tt_op *h);

static const char freed_msg[] = "the op is no longer defined (the library that defined it "
                                "was freed)";

/* tt__op_pin without the error. */
static const tt_opdef *pin_quiet(const tt_op *op)
{
    tt_op *h = (tt_op *)op; /* the counters are the registry's, not the caller's */
    tt_opdef *d;
    if (h->builtin) {
        d = atomic_load_explicit(&h->def, memory_order_acquire);
    } else {
        /* Counted before the definition is read: a free that retires it
         * after this sees the pin (all sequentially consistent). */
        atomic_fetch_add(&h->pins, 1);
        d = atomic_load(&h->def);
        /* Every unpin that brings the count to zero reclaims: a reclaim
         * that saw this pin left the list to it. */
        if (!d && atomic_fetch_sub(&h->pins, 1) == 1 && atomic_load(&h->retired))
            reclaim(h);
    }
    return d;
}

const tt_opdef *tt__op_pin(const tt_op *op)
{
    const tt_opdef *d = pin_quiet(op);
    if (!d)
        tt_error(TT_ENOTFOUND, "%s: %s", op->name, freed_msg);
    return d;
}

void tt__op_pin_again(const tt_opdef *d)
{
    tt_op *h = (tt_op *)d->handle;
    if (!h->builtin)
        atomic_fetch_add(&h->pins, 1);
}

static void defs_free(tt_opdef *d)
{
    while (d) {
        tt_opdef *next = d->next_retired;
        tt_schema_free(d->schema);
        tt__free(d);
        atomic_fetch_sub(&ndefs, 1);
        d = next;
    }
}

static void retired_push(tt_op *h, tt_opdef *first, tt_opdef *last)
{
    tt_opdef *old = atomic_load(&h->retired);
    do
        last->next_retired = old;
    while (!atomic_compare_exchange_weak(&h->retired, &old, first));
}

/* Frees h's retired definitions if no call pins h. Whoever takes the list
 * owns it; a retired definition can only be in use by a call that pinned
 * before it was retired, so a count of zero read after taking the list
 * means none is. If a call pinned meanwhile, the list goes back, for that
 * call's unpin. */
static void reclaim(tt_op *h)
{
    for (;;) {
        tt_opdef *r = atomic_exchange(&h->retired, NULL);
        if (!r)
            return;
        if (atomic_load(&h->pins) == 0) {
            defs_free(r);
            return;
        }
        tt_opdef *last = r;
        while (last->next_retired)
            last = last->next_retired;
        retired_push(h, r, last);
        if (atomic_load(&h->pins) != 0)
            return; /* its unpin comes after the push and reclaims */
    }
}

void tt__op_unpin(const tt_opdef *d)
{
    tt_op *h = (tt_op *)d->handle; /* d may be freed once the pin is gone */
    if (!h->builtin && atomic_fetch_sub(&h->pins, 1) == 1 && atomic_load(&h->retired))
        reclaim(h);
}

/* Retires h's definition: h is undefined from now on, and the definition
 * is freed when no call uses it. Caller holds the write lock. */
static void retire(tt_op *h, tt_opdef *d)
{
    atomic_store(&h->def, NULL);
    retired_push(h, d, d);
    reclaim(h);
}

void tt_op_counts(int64_t *handles, int64_t *definitions)
{
    pthread_rwlock_rdlock(&lock);
    if (handles)
        *handles = nops;
    if (definitions)
        *definitions = atomic_load(&ndefs);
    pthread_rwlock_unlock(&lock);
}

/* ----------------------------------------------------------- libraries */

/* " at file.c:12" for a registration's place, "" when unknown. */
static const char *at_str(tt_srcloc loc, char *buf, size_t n)
{
    if (loc.file)
        snprintf(buf, n, " at %s:%d", loc.file, loc.line);
    else
        buf[0] = '\0';
    return buf;
}

/* Set while ops/ makes the built-ins' library: the one DEF of "tt". */
static _Thread_local bool making_builtins;

tt_library *tt__builtin_library_new(void)
{
    making_builtins = true;
    tt_library *lib = tt_library_new_at(TT_LIB_DEF, "tt", (tt_srcloc){0});
    making_builtins = false;
    return lib;
}

tt_library *tt_library_new_at(tt_library_kind kind, const char *ns, tt_srcloc loc)
{
    if (kind != TT_LIB_DEF && kind != TT_LIB_FRAGMENT && kind != TT_LIB_IMPL) {
        tt_error(TT_EINVAL, "tt_library_new: argument 'kind' must be TT_LIB_DEF, "
                            "TT_LIB_FRAGMENT or TT_LIB_IMPL (got %d)", (int)kind);
        return NULL;
    }
    if (!is_ident(ns)) {
        tt_error(TT_EINVAL, "tt_library_new: argument 'ns' must be an identifier "
                            "such as 'mylib' (got '%s')", ns ? ns : "(null)");
        return NULL;
    }
    tt_library *lib = tt__malloc(sizeof *lib);
    char *nsc = lib ? tt__strdup(ns) : NULL;
    if (!nsc) {
        tt__free(lib);
        return NULL;
    }
    *lib = (tt_library){kind, nsc, 0, loc};
    pthread_rwlock_wrlock(&lock);
    /* "tt" is the built-ins' (ops/ makes its library when it loads) and
     * takes kernels (IMPL) only, even where ops/ was never loaded (a
     * static link that references none of it): an op a user defined there
     * would pass for a built-in that has no place in the table. */
    if (kind != TT_LIB_IMPL && strcmp(ns, "tt") == 0 && !making_builtins) {
        pthread_rwlock_unlock(&lock);
        tt__free(nsc);
        tt__free(lib);
        tt_error(TT_EINVAL, "tt_library_new: namespace 'tt' belongs to the built-in "
                            "ops, so a %s library cannot add ops to it; define your "
                            "ops in a namespace of your own (such as 'mylib'), or "
                            "override a built-in's kernel with a TT_LIB_IMPL library",
                 kind_name(kind));
        return NULL;
    }
    if (kind == TT_LIB_DEF)
        for (int i = 0; i < nlibs; i++)
            if (libs[i]->kind == TT_LIB_DEF && strcmp(libs[i]->ns, ns) == 0) {
                pthread_rwlock_unlock(&lock);
                tt__free(nsc);
                tt__free(lib);
                char at[300];
                tt_error(TT_EEXIST, "tt_library_new: namespace '%s' is already "
                                    "defined by another DEF library (#%d, made%s); use "
                                    "TT_LIB_FRAGMENT to add ops to it", ns,
                         libs[i]->id, at_str(libs[i]->where, at, sizeof at));
                return NULL;
            }
    if (!push_ptr((void ***)&libs, &nlibs, &cap_libs, lib)) {
        pthread_rwlock_unlock(&lock);
        tt__free(nsc);
        tt__free(lib);
        return NULL;
    }
    lib->id = next_lib_id++;
    pthread_rwlock_unlock(&lock);
    return lib;
}

/* Built-in `id` runs a kernel that is not its own (an IMPL library's cpu
 * kernel): the typed wrappers' fast path checks this before calling the
 * built-in's function directly, so a wrapper and tt_call always run the
 * same kernel. tt__builtin_overrides counts them, for the runtime's views
 * and factories, which do not know their op's id. */
_Atomic unsigned char tt__builtin_overridden[TT_OP_COUNT];
atomic_int tt__builtin_overrides;

/* Caller holds the write lock. */
static void note_override(tt_opdef *op)
{
    if (op->builtin_id < 0)
        return;
    kernel_slot *cpu = &op->kernels[TT_DEV_CPU];
    bool now = (atomic_load(&cpu->fn) && cpu->owner != op->def_lib) ||
               (atomic_load(&op->default_kernel.fn) && op->default_kernel.owner != op->def_lib);
    bool was = atomic_exchange(&tt__builtin_overridden[op->builtin_id], now);
    if (now != was)
        atomic_fetch_add(&tt__builtin_overrides, now ? 1 : -1);
}

static void set_slot(kernel_slot *s, tt_kernel_fn k, tt_library *lib, tt_srcloc where,
                     const char *how)
{
    s->owner = lib;
    s->where = where;
    s->how = how;
    atomic_store(&s->fn, k);
}

static void clear_slot(kernel_slot *s, tt_library *lib)
{
    if (s->owner == lib) {
        atomic_store(&s->fn, NULL);
        s->owner = NULL;
    }
}

tt_library *tt_library_free(tt_library *lib)
{
    if (!lib)
        return NULL;
    pthread_rwlock_wrlock(&lock);
    for (int i = 0; i < nops; i++) {
        tt_opdef *op = atomic_load(&ops[i]->def);
        if (!op)
            continue;
        if (op->def_lib == lib) {
            /* The definition keeps every registration it has (a call in
             * flight runs with them) and goes when no call uses it. */
            retire(ops[i], op);
            continue;
        }
        for (int d = 0; d < TT_DEVICE_COUNT; d++)
            clear_slot(&op->kernels[d], lib);
        clear_slot(&op->default_kernel, lib);
        clear_slot(&op->fake, lib);
        if (op->autograd_owner == lib) {
            atomic_store(&op->backward, NULL);
            op->setup_context = NULL;
            op->autograd_owner = NULL;
        }
        note_override(op);
    }
    for (int i = 0; i < nlibs; i++)
        if (libs[i] == lib) {
            libs[i] = libs[--nlibs];
            break;
        }
    pthread_rwlock_unlock(&lock);
    tt__free(lib->ns);
    tt__free(lib);
    return NULL;
}

/* ------------------------------------------------------------- look-up */

tt_op *tt_op_find(const char *name)
{
    if (!name) {
        tt_error(TT_EINVAL, "tt_op_find: argument 'name' is NULL");
        return NULL;
    }
    pthread_rwlock_rdlock(&lock);
    tt_op *op = find_locked(name);
    if (op && atomic_load(&op->def)) {
        pthread_rwlock_unlock(&lock);
        return op;
    }
    /* Say what exists: the overloads of that name, or the namespace. */
    char known[1024] = "";
    size_t len = 0, nl = strlen(name);
    int count = 0;
    for (int i = 0; i < nops && len < sizeof known - 64; i++) {
        const char *n = ops[i]->name;
        if (atomic_load(&ops[i]->def) && strncmp(n, name, nl) == 0 && n[nl] == '.') {
            len += (size_t)snprintf(known + len, sizeof known - len, "%s%s",
                                    count++ ? ", " : "", n);
        }
    }
    pthread_rwlock_unlock(&lock);
    if (count)
        tt_error(TT_ENOTFOUND, "tt_op_find: no op named '%s'; it has overloads: %s",
                 name, known);
    else
        tt_error(TT_ENOTFOUND, "tt_op_find: no op named '%s'%s", name,
                 strstr(name, "::") ? "" : " (names look like 'mylib::crop')");
    return NULL;
}

tt_op *tt_op_out_variant(const tt_op *h)
{
    if (!h) {
        tt_error(TT_EINVAL, "tt_op_out_variant: argument 'op' is NULL");
        return NULL;
    }
    const tt_opdef *op = tt__op_pin(h);
    if (!op)
        return NULL;
    const tt_schema *s = op->schema;
    const char *ovl = tt_schema_overload(s);
    char names[2][TT_MAX_OP_NAME + 8];
    int nn = 1;
    snprintf(names[0], sizeof names[0], "%s::%s.%s%s", tt_schema_ns(s), tt_schema_name(s), ovl,
             *ovl ? "_out" : "out");
    if (*ovl)
        snprintf(names[nn++], sizeof names[1], "%s::%s.out_%s", tt_schema_ns(s),
                 tt_schema_name(s), ovl);
    tt_op *found = NULL;
    pthread_rwlock_rdlock(&lock);
    for (int i = 0; i < nn && !found && op->kind == TT_OPKIND_FUNCTIONAL; i++) {
        tt_op *v = find_locked(names[i]);
        const tt_opdef *d = v ? atomic_load(&v->def) : NULL;
        if (d && d->kind == TT_OPKIND_OUT)
            found = v;
    }
    pthread_rwlock_unlock(&lock);
    if (!found) {
        if (op->kind != TT_OPKIND_FUNCTIONAL)
            tt_error(TT_ENOTFOUND, "tt_op_out_variant: %s is not a functional op, so it has no "
                                   "out= variant", op->name);
        else
            tt_error(TT_ENOTFOUND, "tt_op_out_variant: %s has no out= variant (looked for %s%s%s)",
                     op->name, names[0], nn > 1 ? " and " : "", nn > 1 ? names[1] : "");
    }
    tt__op_unpin(op);
    return found;
}

int tt_op_overloads(const char *name, const tt_op **out, int max)
{
    if (!name)
        return 0;
    /* "ns::name" and "ns::name.<overload>": the name itself first, then its
     * overloads in the order they were first defined, as PyTorch's
     * OpOverloadPacket tries them. */
    char base[TT_MAX_OP_NAME + 1];
    const char *sep = strstr(name, "::");
    const char *dot = sep ? strchr(sep + 2, '.') : NULL;
    size_t bl = dot ? (size_t)(dot - name) : strlen(name);
    if (bl > TT_MAX_OP_NAME)
        return 0;
    memcpy(base, name, bl);
    base[bl] = '\0';
    int count = 0;
    pthread_rwlock_rdlock(&lock);
    tt_op *self = find_locked(base);
    if (self && atomic_load(&self->def)) {
        if (out && count < max)
            out[count] = self;
        count++;
    }
    for (int i = 0; i < nops; i++) {
        const char *n = ops[i]->name;
        if (atomic_load(&ops[i]->def) && strncmp(n, base, bl) == 0 && n[bl] == '.') {
            if (out && count < max)
                out[count] = ops[i];
            count++;
        }
    }
    pthread_rwlock_unlock(&lock);
    return count;
}

const char *tt_op_name(const tt_op *op) { return op ? op->name : "(null)"; }

/* Unpinned: the schema is freed with its definition, so it is valid while
 * the op stays defined (or inside a call of it, which pins it). */
const tt_schema *tt_op_schema(const tt_op *op)
{
    const tt_opdef *d = op ? atomic_load(&((tt_op *)op)->def) : NULL;
    return d ? d->schema : NULL;
}

bool tt_op_is_builtin(const tt_op *op) { return op && op->builtin; }

void tt__set_builtin(tt_builtin_id id, tt_op *op, unsigned flags)
{
    op->builtin_id = (int)id;
    atomic_load(&op->def)->builtin_id = (int)id;
    atomic_load(&op->def)->saves_self = (flags & TT_BUILTIN_SAVES_SELF) != 0;
    tt__builtins[id] = op;
}

int tt__builtin_id(const tt_op *op) { return op ? op->builtin_id : -1; }

const char *tt__op_label(tt_builtin_id id) { return tt__builtins[id]->label; }

/* The questions below pin the definition they read, so they are safe to
 * ask while another thread frees the op's library; an undefined op has
 * nothing registered. */

bool tt_op_has_fake(const tt_op *op)
{
    const tt_opdef *d = op ? pin_quiet(op) : NULL;
    bool has = d && atomic_load(&d->fake.fn);
    if (d)
        tt__op_unpin(d);
    return has;
}

bool tt_op_has_autograd(const tt_op *op)
{
    const tt_opdef *d = op ? pin_quiet(op) : NULL;
    tt_backward_fn b = d ? atomic_load(&d->backward) : NULL;
    if (d)
        tt__op_unpin(d);
    return b && b != tt_autograd_fallthrough;
}

bool tt_op_has_kernel(const tt_op *op, tt_device dev)
{
    if ((unsigned)dev >= TT_DEVICE_COUNT)
        return false;
    const tt_opdef *d = op ? pin_quiet(op) : NULL;
    if (!d)
        return false;
    bool has = dev == TT_DEV_META /* the meta kernel is the fake kernel */
                   ? atomic_load(&d->fake.fn) != NULL
                   : atomic_load(&d->kernels[dev].fn) || atomic_load(&d->default_kernel.fn);
    tt__op_unpin(d);
    return has;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(tt_op *const *)a)->name, (*(tt_op *const *)b)->name);
}

void tt_op_foreach(void (*fn)(const tt_op *op, void *ud), void *ud)
{
    pthread_rwlock_rdlock(&lock);
    tt_op **copy = tt__malloc(sizeof *copy * (size_t)(nops ? nops : 1));
    int n = 0;
    if (copy)
        for (int i = 0; i < nops; i++)
            if (atomic_load(&ops[i]->def))
                copy[n++] = ops[i];
    pthread_rwlock_unlock(&lock);
    if (!copy)
        return;
    qsort(copy, (size_t)n, sizeof *copy, by_name);
    for (int i = 0; i < n; i++)
        fn(copy[i], ud);
    tt__free(copy);
}

/* ---------------------------------------------------------- definition */

/* Parses "a, b" into a bit mask of argument indices of `s`. */
static tt_status parse_mutates(const char *fn, const char *qual,
                               const tt_schema *s, const char *list,
                               uint32_t *mask)
{
    *mask = 0;
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *b = p;
        while (*p && *p != ',' && *p != ' ')
            p++;
        if (p == b)
            break;
        int idx = -1, n = tt_schema_nargs(s);
        for (int i = 0; i < n; i++) {
            const char *an = tt_schema_arg(s, i)->name;
            if (strlen(an) == (size_t)(p - b) && strncmp(an, b, (size_t)(p - b)) == 0)
                idx = i;
        }
        if (idx < 0) {
            char names[512] = "";
            size_t len = 0;
            for (int i = 0; i < n && len < sizeof names - 64; i++)
                len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
                                        i ? ", " : "", tt_schema_arg(s, i)->name);
            return tt_error(TT_EINVAL, "%s: %s: mutates_args names '%.*s', which "
                                       "is not an argument (arguments: %s)",
                            fn, qual, (int)(p - b), b, n ? names : "none");
        }
        if (tt_schema_arg(s, idx)->type.base != TT_T_TENSOR)
            return tt_error(TT_EINVAL, "%s: %s: mutates_args names '%s', which is "
                                       "not a Tensor; only tensors can be mutated",
                            fn, qual, tt_schema_arg(s, idx)->name);
        *mask |= 1u << idx;
    }
    return TT_OK;
}

/* aten names out= overloads "out", "X_out" (add.Scalar_out) or "out_X";
 * "outer" or "output" is an ordinary overload and must not be held to
 * out= rules. */
static bool is_out_overload(const char *ovl)
{
    size_t n = strlen(ovl);
    return strcmp(ovl, "out") == 0 || strncmp(ovl, "out_", 4) == 0 ||
           (n > 4 && strcmp(ovl + n - 4, "_out") == 0);
}

/* ------------------------------------------------- variants (torchgen) */

/* The functional op's name for a variant "ns::foo_.X" (in-place) or
 * "ns::foo.out" / "ns::foo.X_out" / "ns::foo.out_X" (out=): "ns::foo.X". */
static void functional_name(const tt_schema *s, tt_opkind kind, char *buf, size_t n)
{
    const char *name = tt_schema_name(s), *ovl = tt_schema_overload(s);
    size_t nl = strlen(name), ol = strlen(ovl);
    if (kind == TT_OPKIND_INPLACE) {
        snprintf(buf, n, "%s::%.*s%s%s", tt_schema_ns(s), (int)(nl - 1), name, ol ? "." : "",
                 ovl);
    } else if (strcmp(ovl, "out") == 0) {
        snprintf(buf, n, "%s::%s", tt_schema_ns(s), name);
    } else if (strncmp(ovl, "out_", 4) == 0) {
        snprintf(buf, n, "%s::%s.%s", tt_schema_ns(s), name, ovl + 4);
    } else {
        snprintf(buf, n, "%s::%s.%.*s", tt_schema_ns(s), name, (int)(ol - 4), ovl);
    }
}

/* Why the variant's arguments are not the functional op's (plus, for an
 * out= variant, its out arguments): TT_ESCHEMA naming the argument that
 * differs, or TT_OK. torchgen's rule: one signature for the group. */
static tt_status variant_check(const char *fn, const char *vqual, const tt_schema *vs,
                               uint32_t vmut, tt_opkind kind, const char *fqual,
                               const tt_schema *fs)
{
    bool inplace = kind == TT_OPKIND_INPLACE;
    const char *what = inplace ? "an in-place variant" : "an out= variant";
    int fn_args = tt_schema_nargs(fs), vn = tt_schema_nargs(vs), fi = 0;
    int nout = 0;
    for (int vi = 0; vi < vn; vi++) {
        const tt_arg *va = tt_schema_arg(vs, vi);
        if (!inplace && (vmut >> vi & 1) && va->kwarg_only) {
            nout++;
            continue; /* an out argument */
        }
        char vt[256], ft[256];
        /* self of an in-place op is the functional's self, written. */
        tt__arg_print(va, !(inplace && vi == 0), vt, sizeof vt);
        if (fi >= fn_args)
            return tt_error(TT_ESCHEMA, "%s: %s: %s takes the arguments of its functional op "
                                        "%s, but argument '%s' ('%s') is not one of them",
                            fn, vqual, what, fqual, va->name, vt);
        const tt_arg *fa = tt_schema_arg(fs, fi++);
        tt__arg_print(fa, true, ft, sizeof ft);
        if (strcmp(vt, ft) != 0)
            return tt_error(TT_ESCHEMA, "%s: %s: %s takes the arguments of its functional op "
                                        "%s, but argument #%d differs: '%s' in %s, '%s' in %s",
                            fn, vqual, what, fqual, vi + 1, vt, vqual, ft, fqual);
    }
    if (fi < fn_args)
        return tt_error(TT_ESCHEMA, "%s: %s: %s takes the arguments of its functional op %s, "
                                    "but argument '%s' of %s is missing",
                        fn, vqual, what, fqual, tt_schema_arg(fs, fi)->name, fqual);
    int fr = tt_schema_nreturns(fs);
    if (!inplace && nout != fr)
        return tt_error(TT_ESCHEMA, "%s: %s: an out= variant has one out argument per result "
                                    "of its functional op %s (%d), but has %d", fn, vqual, fqual,
                        fr, nout);
    if (inplace && (fr != 1 || tt_schema_return(fs, 0)->type.base != TT_T_TENSOR))
        return tt_error(TT_ESCHEMA, "%s: %s: an in-place variant's functional op %s returns "
                                    "one Tensor (self's new value)", fn, vqual, fqual);
    return TT_OK;
}

/* Classifies the op as torchgen does and enforces the conventions of the
 * in-place and out= forms. */
static tt_status classify(const char *fn, const char *qual, const tt_schema *s,
                          uint32_t mutated, bool builtin, tt_opkind *kind)
{
    int na = tt_schema_nargs(s), nr = tt_schema_nreturns(s);
    const char *name = tt_schema_name(s), *ovl = tt_schema_overload(s);
    for (int i = 0; i < na; i++) {
        const tt_arg *a = tt_schema_arg(s, i);
        if (!(mutated >> i & 1) || !a->type.optional || a->type.is_list || !a->alias_set)
            continue;
        /* An optional tensor the op writes is fine (PyTorch functionalizes
         * it: auto_functionalize); one it also returns is a "maybe-out"
         * op, whose result is sometimes the argument and sometimes new. */
        for (int j = 0; j < nr; j++) {
            const tt_arg *r = tt_schema_return(s, j);
            if (r->alias_set && strcmp(r->alias_set, a->alias_set) == 0)
                return tt_error(TT_ESCHEMA,
                                "%s: %s: argument '%s' is an optional mutated tensor that "
                                "the op also returns (return %d is 'Tensor(%s!)'), so the "
                                "op sometimes returns it and sometimes allocates its result "
                                "(a \"maybe-out\" op); this is not supported: split it into "
                                "a functional op '%s' that returns a new tensor and an out= "
                                "op '%s.out' whose keyword-only 'Tensor(a!) out' is required "
                                "(an op that writes an optional tensor and does not return "
                                "it is accepted)", fn, qual, a->name, j, a->alias_set, qual,
                                qual);
        }
    }
    size_t nl = strlen(name);
    bool inplace_name = nl > 1 && name[nl - 1] == '_' && name[nl - 2] != '_';
    bool out_ovl = is_out_overload(ovl);
    /* torch.library.custom_op accepts 'name_' for any mutable op that
     * returns nothing; the self-returning form is torchgen's rule for
     * built-ins, and applies to 'name_' ops that return something. */
    if (inplace_name && nr == 0 && mutated && !builtin) {
        *kind = TT_OPKIND_MUTABLE;
        return TT_OK;
    }
    if (inplace_name) {
        const tt_arg *self = na ? tt_schema_arg(s, 0) : NULL;
        const tt_arg *ret = nr == 1 ? tt_schema_return(s, 0) : NULL;
        if (!self || !(mutated & 1) || self->type.base != TT_T_TENSOR ||
            self->type.is_list || !ret || ret->type.base != TT_T_TENSOR ||
            !ret->is_write || !ret->alias_set || !self->alias_set ||
            strcmp(ret->alias_set, self->alias_set) != 0)
            return tt_error(TT_ESCHEMA,
                            "%s: %s: an in-place op (its name ends in '_') must take "
                            "'Tensor(a!) self' as its first argument and return it "
                            "as '-> Tensor(a!)'", fn, qual);
        *kind = TT_OPKIND_INPLACE;
        return TT_OK;
    }
    if (out_ovl) {
        int nout = 0;
        for (int i = 0; i < na; i++) {
            const tt_arg *a = tt_schema_arg(s, i);
            if (!(mutated >> i & 1))
                continue;
            if (!a->kwarg_only)
                return tt_error(TT_ESCHEMA, "%s: %s: an out= op's mutated argument "
                                            "'%s' must be keyword-only (after '*')",
                                fn, qual, a->name);
            if (nout >= nr || !tt_schema_return(s, nout)->is_write ||
                !a->alias_set || !tt_schema_return(s, nout)->alias_set ||
                strcmp(tt_schema_return(s, nout)->alias_set, a->alias_set) != 0)
                return tt_error(TT_ESCHEMA, "%s: %s: an out= op must return each "
                                            "out argument, in order, with its alias "
                                            "annotation (argument '%s' is not "
                                            "returned as 'Tensor(%s!)')", fn, qual,
                                a->name, a->alias_set ? a->alias_set : "a");
            nout++;
        }
        if (nout == 0)
            return tt_error(TT_ESCHEMA, "%s: %s: an out= op (overload '%s') needs a "
                                        "keyword-only 'Tensor(a!) out' argument",
                            fn, qual, ovl);
        if (nout != nr)
            return tt_error(TT_ESCHEMA, "%s: %s: an out= op returns exactly its %d "
                                        "out argument(s), but the schema has %d "
                                        "returns", fn, qual, nout, nr);
        *kind = TT_OPKIND_OUT;
        return TT_OK;
    }
    *kind = mutated ? TT_OPKIND_MUTABLE : TT_OPKIND_FUNCTIONAL;
    if (*kind == TT_OPKIND_FUNCTIONAL)
        for (int i = 0; i < nr; i++)
            if (tt_schema_return(s, i)->is_write)
                return tt_error(TT_ESCHEMA, "%s: %s: return %d is annotated as "
                                            "written (!) but no argument is",
                                fn, qual, i);
    return TT_OK;
}

static tt_status parse_devices(const char *fn, const char *list, uint32_t *mask)
{
    *mask = 0;
    char name[32];
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = 0;
        while (p[n] && p[n] != ',' && p[n] != ' ')
            n++;
        if (n == 0)
            break;
        snprintf(name, sizeof name, "%.*s", (int)(n < 31 ? n : 31), p);
        int d = tt_device_from_name(name);
        if (d < 0)
            return tt_error(TT_EINVAL, "%s: device type '%s' does not exist; known "
                                       "device types: cpu, cuda, meta", fn, name);
        *mask |= 1u << d;
        p += n;
    }
    if (*mask == 0)
        return tt_error(TT_EINVAL, "%s: argument 'device_types' names no device "
                                   "(got \"%s\"); use NULL for every device", fn, list);
    return TT_OK;
}

static bool has_tensor_input(const tt_schema *s)
{
    for (int i = 0; i < tt_schema_nargs(s); i++)
        if (tt_schema_arg(s, i)->type.base == TT_T_TENSOR)
            return true;
    return false;
}

/* torch.library refuses autograd for any op that is not functional
 * (in-place, out= or mutable): the formula would see inputs the op has
 * already overwritten. The built-in in-place ops are the exception, as in
 * aten: their derivatives are written against what they save. */
static bool autograd_allowed(tt_opkind kind, bool builtin)
{
    return kind == TT_OPKIND_FUNCTIONAL || (builtin && kind != TT_OPKIND_OUT);
}

/* Where PyTorch accepts an autograd formula: a functional op (mutating
 * nothing) that returns at least one new tensor (not a view). Built-ins
 * are held to aten's rules instead (its views and in-place ops have
 * derivatives). TT_OK or TT_EINVAL with the reason. */
static tt_status autograd_check(const char *fn, const char *qual, const tt_schema *s,
                                tt_opkind kind, bool builtin)
{
    if (!has_tensor_input(s))
        return tt_error(TT_EINVAL, "%s: %s has no Tensor inputs, so there is nothing to "
                                   "differentiate", fn, qual);
    if (!autograd_allowed(kind, builtin))
        return tt_error(TT_EINVAL, "%s: %s mutates its arguments; autograd is supported for "
                                   "functional ops (register it on the functional variant)",
                        fn, qual);
    if (builtin)
        return TT_OK;
    int nr = tt_schema_nreturns(s), tensors = 0;
    for (int j = 0; j < nr; j++) {
        const tt_arg *r = tt_schema_return(s, j);
        if (r->alias_set)
            return tt_error(TT_EINVAL, "%s: %s returns a view of its input (return %d is "
                                       "'Tensor(%s)'); autograd is supported for functional "
                                       "ops that return new tensors, as in PyTorch: make "
                                       "the op return a copy, or differentiate the op that "
                                       "made the input", fn, qual, j, r->alias_set);
        tensors += r->type.base == TT_T_TENSOR;
    }
    if (tensors == 0)
        return tt_error(TT_EINVAL, "%s: %s returns no tensor, so there is no output to "
                                   "differentiate; autograd is supported for functional ops "
                                   "that return at least one tensor", fn, qual);
    return TT_OK;
}

static const char *const tag_names[TT_TAG_COUNT] = {
#define TT_X_TAG_NAME(tag, name) name,
    TT_TAG_LIST(TT_X_TAG_NAME)
#undef TT_X_TAG_NAME
};

const char *tt_tag_name(tt_tag tag)
{
    for (int b = 0; b < TT_TAG_COUNT; b++)
        if ((unsigned)tag == 1u << b)
            return tag_names[b];
    return NULL;
}

/* The tags are known and what they say of the schema holds. */
static tt_status tags_check(const char *fn, const char *qual, const tt_schema *s, unsigned tags,
                            tt_opkind kind)
{
    unsigned unknown = tags & ~((1u << TT_TAG_COUNT) - 1);
    if (unknown)
        return tt_error(TT_EINVAL, "%s: %s: spec->tags has bits 0x%x that name no tag (the "
                                   "tags are TT_TAG_PT2_COMPLIANT, TT_TAG_NONDETERMINISTIC_SEEDED, "
                                   "TT_TAG_DATA_DEPENDENT_OUTPUT, TT_TAG_NEEDS_FIXED_STRIDE_ORDER, "
                                   "TT_TAG_POINTWISE, TT_TAG_INPLACE and TT_TAG_OUT)", fn, qual,
                        unknown);
    if ((tags & TT_TAG_INPLACE) && kind != TT_OPKIND_INPLACE)
        return tt_error(TT_ESCHEMA, "%s: %s: tagged inplace, but an in-place op is named "
                                    "'name_', takes 'Tensor(a!) self' first and returns it as "
                                    "'-> Tensor(a!)'", fn, qual);
    if ((tags & TT_TAG_OUT) && kind != TT_OPKIND_OUT)
        return tt_error(TT_ESCHEMA, "%s: %s: tagged out, but an out= op is an overload named "
                                    "'out' (or 'X_out') with keyword-only 'Tensor(a!)' out "
                                    "arguments that it returns", fn, qual);
    if (!(tags & TT_TAG_POINTWISE))
        return TT_OK;
    int nr = tt_schema_nreturns(s);
    const tt_arg *r = nr == 1 ? tt_schema_return(s, 0) : NULL;
    if (kind != TT_OPKIND_FUNCTIONAL || !r || r->type.base != TT_T_TENSOR || r->type.is_list ||
        r->alias_set || !has_tensor_input(s))
        return tt_error(TT_EINVAL, "%s: %s: tagged pointwise, but a pointwise op is functional, "
                                   "takes tensors and returns one new tensor (of their "
                                   "broadcast shape)", fn, qual);
    return TT_OK;
}

int tt_op_describe(const tt_op *h, char *buf, size_t n)
{
    const tt_opdef *op = h ? pin_quiet(h) : NULL;
    if (!op) {
        int len = snprintf(buf, n, "%s (not defined)", h ? h->name : "(null)");
        return len;
    }
    int len = tt_schema_print(op->schema, buf, n);
    for (int b = 0, k = 0; b < TT_TAG_COUNT; b++)
        if (op->tags >> b & 1) {
            size_t at = (size_t)len < n ? (size_t)len : n;
            len += snprintf(n > at ? buf + at : NULL, n > at ? n - at : 0, "%s%s",
                            k++ ? ", " : "  [tags: ", tag_names[b]);
        }
    if (op->tags) {
        size_t at = (size_t)len < n ? (size_t)len : n;
        len += snprintf(n > at ? buf + at : NULL, n > at ? n - at : 0, "]");
    }
    tt__op_unpin(op);
    return len;
}

unsigned tt_op_tags(const tt_op *op)
{
    const tt_opdef *d = op ? pin_quiet(op) : NULL;
    unsigned tags = d ? d->tags : 0;
    if (d)
        tt__op_unpin(d);
    return tags;
}

/* A device-specific kernel needs a call to have a device: a Tensor or a
 * Device argument (PyTorch's register_kernel refuses the same). */
static tt_status device_kernel_check(const char *fn, const char *qual, const tt_schema *s)
{
    for (int i = 0; i < tt_schema_nargs(s); i++)
        if (tt_schema_arg(s, i)->type.base == TT_T_TENSOR ||
            tt_schema_arg(s, i)->type.base == TT_T_DEVICE)
            return TT_OK;
    return tt_error(TT_EINVAL, "%s: %s has neither a Tensor nor a Device argument, so a call "
                               "has no device to choose a kernel by; register a default kernel "
                               "(device type NULL), or give the op a 'Device device' argument",
                    fn, qual);
}

static void qualname(const tt_schema *s, char *buf, size_t n)
{
    const char *ovl = tt_schema_overload(s);
    snprintf(buf, n, "%s::%s%s%s", tt_schema_ns(s), tt_schema_name(s),
             *ovl ? "." : "", ovl);
}

/* A defined op's schema by name, or NULL. Caller holds the lock. */
static const tt_opdef *defined_locked(const char *name)
{
    tt_op *h = find_locked(name);
    return h ? atomic_load(&h->def) : NULL;
}

/* The variant rules between the op being defined and the ops of its group
 * that exist: a tagged variant needs its functional op; an out= variant
 * (tagged or not) takes its functional op's arguments; a functional op
 * defined after its out= variant is held to the same. Caller holds the
 * lock. */
static tt_status variants_check_locked(const char *fn, const char *qual, const tt_schema *s,
                                       uint32_t mutated, tt_opkind kind, unsigned tags)
{
    char fq[TT_MAX_OP_NAME + 8];
    if (kind == TT_OPKIND_INPLACE || kind == TT_OPKIND_OUT) {
        bool tagged = tags & (kind == TT_OPKIND_INPLACE ? TT_TAG_INPLACE : TT_TAG_OUT);
        if (!tagged && kind == TT_OPKIND_INPLACE)
            return TT_OK; /* untagged in-place ops keep torch.library's freedom */
        functional_name(s, kind, fq, sizeof fq);
        const tt_opdef *f = defined_locked(fq);
        if (!f && tagged)
            return tt_error(TT_ESCHEMA, "%s: %s: tagged %s, so its functional op %s must be "
                                        "defined first (torchgen's rule: a variant belongs "
                                        "to a functional op)", fn, qual,
                            kind == TT_OPKIND_INPLACE ? "inplace" : "out", fq);
        if (f && f->kind != TT_OPKIND_FUNCTIONAL)
            return tagged ? tt_error(TT_ESCHEMA, "%s: %s: its functional op %s mutates its "
                                                 "arguments, so it is not functional", fn,
                                     qual, fq)
                          : TT_OK;
        return f ? variant_check(fn, qual, s, mutated, kind, fq, f->schema) : TT_OK;
    }
    if (kind != TT_OPKIND_FUNCTIONAL)
        return TT_OK;
    /* The out= variants this op would be the functional op of. */
    const char *ovl = tt_schema_overload(s);
    for (int form = 0; form < 3; form++) {
        if (!*ovl && form > 0)
            break;
        if (form == 0)
            snprintf(fq, sizeof fq, "%s::%s.%s%s", tt_schema_ns(s), tt_schema_name(s), ovl,
                     *ovl ? "_out" : "out");
        else if (form == 1)
            snprintf(fq, sizeof fq, "%s::%s.out_%s", tt_schema_ns(s), tt_schema_name(s), ovl);
        else
            break;
        const tt_opdef *v = defined_locked(fq);
        if (v && v->kind == TT_OPKIND_OUT &&
            variant_check(fn, fq, v->schema, v->mutated, TT_OPKIND_OUT, qual, s))
            return tt_error(TT_ESCHEMA, "%s: %s: its out= variant %s is defined and does not "
                                        "match it (%s)", fn, qual, fq,
                            tt_errmsg() + strlen(fn) + 2);
    }
    return TT_OK;
}

tt_op *tt_custom_op_define_at(tt_library *lib, const tt_custom_op_spec *spec, tt_srcloc loc)
{
    const char *fn = "tt_custom_op_define";
    if (!lib || !spec || !spec->schema) {
        tt_error(TT_EINVAL, "%s: argument '%s' is NULL", fn,
                 !lib ? "lib" : !spec ? "spec" : "spec->schema");
        return NULL;
    }
    if (lib->kind == TT_LIB_IMPL) {
        tt_error(TT_EINVAL, "%s: library IMPL '%s' cannot define ops; use a DEF "
                            "or FRAGMENT library", fn, lib->ns);
        return NULL;
    }
    tt_schema *s = tt_schema_parse(spec->schema);
    if (!s)
        return NULL;
    tt_opdef *op = NULL;
    char qual[256];
    qualname(s, qual, sizeof qual);
    uint32_t devices = 0, annotated = 0, listed = 0;
    tt_opkind kind;
    bool builtin = strcmp(lib->ns, "tt") == 0;
    if (strcmp(tt_schema_ns(s), lib->ns) != 0) {
        tt_error(TT_EINVAL, "%s: %s: a library for namespace '%s' cannot define ops "
                            "in namespace '%s'", fn, qual, lib->ns, tt_schema_ns(s));
        goto fail;
    }
    if (tt_schema_nargs(s) > TT_MAX_ARGS || tt_schema_nreturns(s) > TT_MAX_RETURNS) {
        tt_error(TT_ESCHEMA, "%s: %s: at most %d arguments and %d returns are "
                             "supported", fn, qual, TT_MAX_ARGS, TT_MAX_RETURNS);
        goto fail;
    }
    for (int i = 0; i < tt_schema_nargs(s); i++)
        if (tt_schema_arg(s, i)->is_write)
            annotated |= 1u << i;
    bool unknown = spec->mutates_args && strspn(spec->mutates_args, " ") <
                                             strlen(spec->mutates_args) &&
                   strcmp(spec->mutates_args + strspn(spec->mutates_args, " "),
                          TT_MUTATES_UNKNOWN) == 0;
    if (unknown) {
        /* Pessimistic: every tensor argument may be written. */
        for (int i = 0; i < tt_schema_nargs(s); i++)
            if (tt_schema_arg(s, i)->type.base == TT_T_TENSOR && !(annotated >> i & 1)) {
                tt__schema_mark_write(s, i);
                annotated |= 1u << i;
            }
    } else if (spec->mutates_args) {
        if (parse_mutates(fn, qual, s, spec->mutates_args, &listed))
            goto fail;
        for (int i = 0; i < tt_schema_nargs(s); i++) {
            const char *an = tt_schema_arg(s, i)->name;
            if ((annotated >> i & 1) && !(listed >> i & 1)) {
                tt_error(TT_ESCHEMA, "%s: %s: the schema marks '%s' as mutated "
                                     "(Tensor(a!)) but mutates_args does not list it",
                         fn, qual, an);
                goto fail;
            }
            if ((listed >> i & 1) && !(annotated >> i & 1) && annotated) {
                tt_error(TT_ESCHEMA, "%s: %s: mutates_args lists '%s' but the schema "
                                     "does not mark it mutated; write 'Tensor(a!) %s'",
                         fn, qual, an, an);
                goto fail;
            }
        }
        /* A schema without annotations takes them from mutates_args, as
         * torch.library.custom_op infers them. */
        for (int i = 0; i < tt_schema_nargs(s); i++)
            if ((listed >> i & 1) && !(annotated >> i & 1))
                tt__schema_mark_write(s, i);
        annotated |= listed;
    }
    if (classify(fn, qual, s, annotated, builtin, &kind))
        goto fail;
    if (tags_check(fn, qual, s, spec->tags, kind))
        goto fail;
    if (spec->device_types && (parse_devices(fn, spec->device_types, &devices) ||
                               device_kernel_check(fn, qual, s)))
        goto fail;
    if ((devices >> TT_DEV_META & 1) && spec->fake) {
        tt_error(TT_EINVAL, "%s: %s: device_types names \"meta\" and the spec has a fake "
                            "kernel: a meta kernel is the fake kernel, give one of them", fn,
                 qual);
        goto fail;
    }
    if (spec->setup_context && !spec->backward) {
        tt_error(TT_EINVAL, "%s: %s: setup_context was given without a backward", fn, qual);
        goto fail;
    }
    if (spec->backward && spec->backward != tt_autograd_fallthrough &&
        autograd_check(fn, qual, s, kind, builtin))
        goto fail;

    op = tt__calloc(1, sizeof *op);
    if (!op)
        goto fail;
    op->schema = s;
    op->def_lib = lib;
    op->builtin = builtin;
    op->builtin_id = -1;
    op->def_where = loc;
    op->tags = spec->tags;
    op->device_arg = -1;
    op->has_tensor_arg = has_tensor_input(s);
    for (int i = tt_schema_nargs(s) - 1; i >= 0; i--)
        if (tt_schema_arg(s, i)->type.base == TT_T_DEVICE && !tt_schema_arg(s, i)->type.is_list)
            op->device_arg = i;
    op->kind = kind;
    op->mutated = annotated;
    op->device_mask = devices;
    op->nargs = tt_schema_nargs(s);
    op->nreturns = tt_schema_nreturns(s);
    op->userdata = spec->userdata;
    op->nondiff = spec->nondifferentiable;
    if (spec->kernel) {
        if (!spec->device_types)
            set_slot(&op->default_kernel, spec->kernel, lib, loc, "tt_custom_op_define");
        for (int d = 0; d < TT_DEVICE_COUNT; d++)
            if (devices >> d & 1)
                set_slot(d == TT_DEV_META ? &op->fake : &op->kernels[d], spec->kernel, lib,
                         loc, d == TT_DEV_META ? "tt_custom_op_define (a \"meta\" kernel)"
                                               : "tt_custom_op_define");
    }
    if (spec->fake)
        set_slot(&op->fake, spec->fake, lib, loc, "tt_custom_op_define");
    if (spec->backward) {
        op->setup_context = spec->setup_context;
        op->autograd_owner = lib;
        op->autograd_where = loc;
        atomic_store(&op->backward, spec->backward);
    }

    pthread_rwlock_wrlock(&lock);
    tt_op *h = find_locked(qual);
    const tt_opdef *had = h ? atomic_load(&h->def) : NULL;
    if (had) {
        char have[512];
        tt_schema_print(had->schema, have, sizeof have);
        char at[300];
        tt_error(TT_EEXIST, "%s: %s is already defined as '%s' (by library %s '%s' "
                            "#%d%s); the new definition was '%s'", fn, qual, have,
                 kind_name(had->def_lib->kind), had->def_lib->ns, had->def_lib->id,
                 at_str(had->def_where, at, sizeof at), spec->schema);
        pthread_rwlock_unlock(&lock);
        goto fail;
    }
    if (variants_check_locked(fn, qual, s, annotated, kind, spec->tags)) {
        pthread_rwlock_unlock(&lock);
        goto fail;
    }
    if (!h) {
        h = tt__calloc(1, sizeof *h);
        char *name = h ? tt__strdup(qual) : NULL;
        char *label = name ? tt__strdup(qual) : NULL;
        if (!label || !index_reserve() || !push_ptr((void ***)&ops, &nops, &cap_ops, h)) {
            tt__free(label);
            tt__free(name);
            tt__free(h);
            pthread_rwlock_unlock(&lock);
            goto fail;
        }
        char *dot = strchr(label + strlen(lib->ns) + 2, '.');
        if (dot)
            *dot = '\0';
        h->name = name;
        h->label = label;
        h->builtin = builtin;
        h->builtin_id = -1;
        index_put(index_slots, index_cap, h);
    }
    op->handle = h;
    op->name = h->name;
    op->label = h->label;
    atomic_fetch_add(&ndefs, 1);
    atomic_store(&h->def, op); /* publishes the definition to lock-free calls */
    pthread_rwlock_unlock(&lock);
    return h;
fail:
    tt__free(op);
    tt_schema_free(s);
    return NULL;
}

/* ----------------------------------------------------------- registration */

/* The definition a registration call names (by name or handle), pinned
 * (the caller unpins it), with the library check. */
static const tt_opdef *op_for_registration(const char *fn, tt_library *lib, tt_opref ref)
{
    const tt_op *h = ref.op;
    if (!h && !ref.name) {
        tt_error(TT_EINVAL, "%s: argument 'op' is NULL", fn);
        return NULL;
    }
    if (!h && !(h = tt_op_find(ref.name))) {
        char why[1024];
        snprintf(why, sizeof why, "%s", tt_errmsg() + strlen("tt_op_find: "));
        tt_error(TT_ENOTFOUND, "%s: %s; define it first with tt_custom_op_define", fn, why);
        return NULL;
    }
    const tt_opdef *op = pin_quiet(h);
    if (!op) {
        tt_error(TT_ENOTFOUND, "%s: %s is no longer defined (the library that defined it "
                               "was freed)", fn, h->name);
        return NULL;
    }
    if (lib && lib->kind != TT_LIB_IMPL && strcmp(lib->ns, tt_schema_ns(op->schema)) != 0) {
        tt_error(TT_EINVAL, "%s: library %s '%s' cannot register kernels for %s; use "
                            "an IMPL library for another namespace", fn,
                 kind_name(lib->kind), lib->ns, op->name);
        tt__op_unpin(op);
        return NULL;
    }
    return op;
}

/* Takes the write lock for a registration on pinned definition op: NULL
 * (lock not held) when op is no longer its handle's definition, its
 * library freed since the registration call began. */
static tt_opdef *lock_for_registration(const char *fn, const tt_opdef *op)
{
    pthread_rwlock_wrlock(&lock);
    if (atomic_load(&op->handle->def) == op)
        return (tt_opdef *)op;
    pthread_rwlock_unlock(&lock);
    tt_error(TT_ENOTFOUND, "%s: %s is no longer defined (the library that defined it "
                           "was freed)", fn, op->name);
    return NULL;
}

/* Installs k into slot unless taken; a taken slot's message says who
 * filled it and where. Caller holds the write lock. */
static tt_status fill_slot(const char *fn, const tt_opdef *op, kernel_slot *slot,
                           const char *what, tt_library *lib, tt_kernel_fn k,
                           tt_srcloc where, const char *how)
{
    if (atomic_load(&slot->fn)) {
        tt_library *o = slot->owner;
        char at[300];
        return tt_error(TT_EEXIST, "%s: %s already has %s (registered by library "
                                   "%s '%s' #%d%s, through %s); free that library to "
                                   "replace it", fn, op->name, what,
                        o ? kind_name(o->kind) : "?", o ? o->ns : "?", o ? o->id : 0,
                        at_str(slot->where, at, sizeof at), slot->how ? slot->how : "?");
    }
    set_slot(slot, k, lib ? lib : op->def_lib, where, how);
    return TT_OK;
}

static tt_status register_kernel(const char *fn, tt_library *lib, const tt_opdef *pinned,
                                 const char *device_type, tt_kernel_fn k, tt_srcloc loc)
{
    if (!k)
        return tt_error(TT_EINVAL, "%s: argument 'fn' is NULL", fn);
    uint32_t mask = 0;
    if (device_type) {
        tt_status st = parse_devices(fn, device_type, &mask);
        if (!st)
            st = device_kernel_check(fn, pinned->name, pinned->schema);
        if (st)
            return st;
    }
    tt_opdef *op = lock_for_registration(fn, pinned);
    if (!op)
        return tt_errcode();
    tt_status st = TT_OK;
    char what[64];
    if (!device_type) {
        st = fill_slot(fn, op, &op->default_kernel, "a default kernel", lib, k, loc,
                       "tt_register_kernel");
    } else {
        /* All slots or none: check them all before filling any. A "meta"
         * kernel is the fake kernel. */
        for (int pass = 0; pass < 2 && !st; pass++)
            for (int d = 0; d < TT_DEVICE_COUNT && !st; d++) {
                kernel_slot *slot = d == TT_DEV_META ? &op->fake : &op->kernels[d];
                if ((mask >> d & 1) && (pass == 1 || atomic_load(&slot->fn))) {
                    snprintf(what, sizeof what, d == TT_DEV_META ? "a fake kernel" : "a %s kernel",
                             tt_device_name((tt_device)d));
                    st = fill_slot(fn, op, slot, what, lib, k, loc,
                                   d == TT_DEV_META ? "tt_register_kernel (a \"meta\" kernel)"
                                                    : "tt_register_kernel");
                }
            }
    }
    note_override(op);
    pthread_rwlock_unlock(&lock);
    return st;
}

tt_status tt_register_kernel_at(tt_library *lib, tt_opref ref, const char *device_type,
                                tt_kernel_fn k, tt_srcloc loc)
{
    const char *fn = "tt_register_kernel";
    const tt_opdef *op = op_for_registration(fn, lib, ref);
    if (!op)
        return tt_errcode();
    tt_status st = register_kernel(fn, lib, op, device_type, k, loc);
    tt__op_unpin(op);
    return st;
}

tt_status tt_register_fake_at(tt_library *lib, tt_opref ref, tt_kernel_fn k, tt_srcloc loc)
{
    const char *fn = "tt_register_fake";
    const tt_opdef *pinned = op_for_registration(fn, lib, ref);
    if (!pinned)
        return tt_errcode();
    tt_status st;
    tt_opdef *op = NULL;
    if (!k)
        st = tt_error(TT_EINVAL, "%s: argument 'fn' is NULL", fn);
    else if (!(op = lock_for_registration(fn, pinned)))
        st = tt_errcode();
    else
        st = fill_slot(fn, op, &op->fake, "a fake kernel", lib, k, loc, fn);
    if (op)
        pthread_rwlock_unlock(&lock);
    tt__op_unpin(pinned);
    return st;
}

tt_status tt_op_set_kernel_enabled(const tt_op *h, const char *device_type, bool enabled)
{
    const char *fn = "tt_op_set_kernel_enabled";
    if (!h || !device_type)
        return tt_error(TT_EINVAL, "%s: argument '%s' is NULL", fn, !h ? "op" : "device_type");
    if (h->builtin)
        return tt_error(TT_EINVAL, "%s: %s is a built-in op; kernels can be switched off for "
                                   "custom ops (override a built-in's kernel with an IMPL "
                                   "library instead)", fn, h->name);
    uint32_t mask = 0;
    tt_status st = parse_devices(fn, device_type, &mask);
    if (st)
        return st;
    if (mask >> TT_DEV_META & 1)
        return tt_error(TT_EINVAL, "%s: %s: device type 'meta' names the fake kernel, which "
                                   "cannot be switched off; name a device (cpu, cuda)", fn,
                        h->name);
    const tt_opdef *op = tt__op_pin(h);
    if (!op) {
        return tt_error(TT_ENOTFOUND, "%s: %s is no longer defined (the library that defined "
                                      "it was freed)", fn, h->name);
    }
    for (int d = 0; d < TT_DEVICE_COUNT && !st; d++)
        if ((mask >> d & 1) && !enabled && !atomic_load(&op->kernels[d].fn)) {
            char reg[256] = "";
            size_t len = 0;
            for (int e = 0; e < TT_DEVICE_COUNT; e++)
                if (atomic_load(&op->kernels[e].fn))
                    len += (size_t)snprintf(reg + len, sizeof reg - len, "%s%s",
                                            len ? ", " : "", tt_device_name((tt_device)e));
            st = tt_error(TT_EINVAL, "%s: %s has no %s kernel to switch off (device "
                                     "kernels: %s%s)", fn, h->name,
                          tt_device_name((tt_device)d), len ? reg : "none",
                          atomic_load(&op->default_kernel.fn) ? "; the default kernel serves "
                                                                "every device" : "");
        }
    if (!st) {
        tt_opdef *w = (tt_opdef *)op; /* the flags are the registry's */
        if (enabled)
            atomic_fetch_and(&w->disabled, ~mask);
        else
            atomic_fetch_or(&w->disabled, mask);
    }
    tt__op_unpin(op);
    return st;
}

bool tt_op_kernel_enabled(const tt_op *h, tt_device d)
{
    if (!h || (unsigned)d >= TT_DEVICE_COUNT)
        return false;
    const tt_opdef *op = pin_quiet(h);
    if (!op)
        return false;
    bool on = atomic_load(&op->kernels[d].fn) && !(atomic_load(&op->disabled) >> d & 1);
    tt__op_unpin(op);
    return on;
}

tt_status tt_autograd_fallthrough(tt_autograd_ctx *ctx, tt_tensor *const *grads, int ngrads,
                                  tt_tensor **grad_inputs, int ninputs)
{
    (void)ctx, (void)grads, (void)ngrads, (void)grad_inputs, (void)ninputs;
    return tt_error(TT_EINTERNAL, "tt_autograd_fallthrough: a marker for "
                                  "tt_register_autograd, not a backward to call");
}

static tt_status register_autograd(const char *fn, tt_library *lib, const tt_opdef *pinned,
                                   tt_backward_fn backward, tt_setup_context_fn setup_context,
                                   tt_srcloc loc)
{
    if (!backward)
        return tt_error(TT_EINVAL, "%s: argument 'backward' is NULL", fn);
    bool fallthrough = backward == tt_autograd_fallthrough;
    if (fallthrough && setup_context)
        return tt_error(TT_EINVAL, "%s: %s: the fallthrough takes no setup_context (it "
                                   "records nothing)", fn, pinned->name);
    tt_status st = fallthrough ? TT_OK : autograd_check(fn, pinned->name, pinned->schema,
                                                        pinned->kind, pinned->builtin);
    if (st)
        return st;
    tt_opdef *op = lock_for_registration(fn, pinned);
    if (!op)
        return tt_errcode();
    if (atomic_load(&op->backward)) {
        tt_library *o = op->autograd_owner;
        char at[300];
        st = tt_error(TT_EEXIST, "%s: %s already has %s (by library %s '%s' #%d%s)", fn,
                      op->name, atomic_load(&op->backward) == tt_autograd_fallthrough
                                    ? "an autograd fallthrough"
                                    : "an autograd registration",
                      o ? kind_name(o->kind) : "?", o ? o->ns : "?", o ? o->id : 0,
                      at_str(op->autograd_where, at, sizeof at));
    } else {
        op->setup_context = setup_context;
        op->autograd_owner = lib ? lib : op->def_lib;
        op->autograd_where = loc;
        atomic_store(&op->backward, backward);
    }
    pthread_rwlock_unlock(&lock);
    return st;
}

tt_status tt_register_autograd_at(tt_library *lib, tt_opref ref, tt_backward_fn backward,
                                  tt_setup_context_fn setup_context, tt_srcloc loc)
{
    const char *fn = "tt_register_autograd";
    const tt_opdef *op = op_for_registration(fn, lib, ref);
    if (!op)
        return tt_errcode();
    tt_status st = register_autograd(fn, lib, op, backward, setup_context, loc);
    tt__op_unpin(op);
    return st;
}
