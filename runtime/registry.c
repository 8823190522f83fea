/* The op registry: libraries, op definitions and kernel registrations.
 *
 * Op entries are never freed while the process runs: freeing a library
 * marks its ops undefined and clears its registrations, so handles that
 * callers cached stay valid and a call through one fails with a message
 * instead of touching freed memory (PyTorch's OperatorHandle is stable the
 * same way). Registration takes a write lock; look-ups take a read lock;
 * calls read the atomic kernel slots without locking. */
#include "dispatch_impl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h> /* qsort */
#include <string.h>

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static tt_op **ops;
static int nops, cap_ops;
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

/* Caller holds the lock. */
static tt_op *find_locked(const char *name)
{
    for (int i = 0; i < nops; i++)
        if (strcmp(ops[i]->name, name) == 0)
            return ops[i];
    return NULL;
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

const char *tt__arg_type_str(const tt_op *op, int i, char *buf, size_t n)
{
    const tt_arg *a = op->schema ? tt_schema_arg(op->schema, i) : NULL;
    if (!a) {
        snprintf(buf, n, "?");
        return buf;
    }
    return tt_type_str(&a->type, buf, n);
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
    /* The built-ins' library is the first DEF of "tt" (ops/ makes it when
     * the library loads); after it, "tt" takes kernels (IMPL) only. */
    if (kind != TT_LIB_IMPL && strcmp(ns, "tt") == 0)
        for (int i = 0; i < nlibs; i++)
            if (libs[i]->kind == TT_LIB_DEF && strcmp(libs[i]->ns, "tt") == 0) {
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
static void note_override(tt_op *op)
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

static void clear_slot(kernel_slot *s, tt_library *lib, bool all)
{
    if (all || s->owner == lib) {
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
        tt_op *op = ops[i];
        bool def = op->def_lib == lib;
        for (int d = 0; d < TT_DEVICE_COUNT; d++)
            clear_slot(&op->kernels[d], lib, def);
        clear_slot(&op->default_kernel, lib, def);
        clear_slot(&op->fake, lib, def);
        if (def || op->autograd_owner == lib) {
            atomic_store(&op->backward, NULL);
            op->setup_context = NULL;
            op->autograd_owner = NULL;
        }
        note_override(op);
        if (def) {
            tt_schema_free(op->schema);
            op->schema = NULL;
            op->def_lib = NULL;
        }
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
    if (op && op->schema) {
        pthread_rwlock_unlock(&lock);
        return op;
    }
    /* Say what exists: the overloads of that name, or the namespace. */
    char known[1024] = "";
    size_t len = 0, nl = strlen(name);
    int count = 0;
    for (int i = 0; i < nops && len < sizeof known - 64; i++) {
        const char *n = ops[i]->name;
        if (ops[i]->schema && strncmp(n, name, nl) == 0 && n[nl] == '.') {
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

const char *tt_op_name(const tt_op *op) { return op ? op->name : "(null)"; }
const tt_schema *tt_op_schema(const tt_op *op) { return op ? op->schema : NULL; }
bool tt_op_is_builtin(const tt_op *op) { return op && op->builtin; }

void tt__set_builtin(tt_builtin_id id, tt_op *op)
{
    op->builtin_id = (int)id;
    tt__builtins[id] = op;
}

int tt__builtin_id(const tt_op *op) { return op ? op->builtin_id : -1; }

const char *tt__op_label(tt_builtin_id id) { return tt__builtins[id]->label; }
bool tt_op_has_fake(const tt_op *op) { return op && atomic_load(&op->fake.fn); }
bool tt_op_has_autograd(const tt_op *op)
{
    tt_backward_fn b = op ? atomic_load(&op->backward) : NULL;
    return b && b != tt_autograd_fallthrough;
}

bool tt_op_has_kernel(const tt_op *op, tt_device d)
{
    if (!op || (unsigned)d >= TT_DEVICE_COUNT)
        return false;
    if (d == TT_DEV_META) /* the meta kernel is the fake kernel */
        return atomic_load(&op->fake.fn);
    return atomic_load(&op->kernels[d].fn) || atomic_load(&op->default_kernel.fn);
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
            if (ops[i]->schema)
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
    /* aten names out= overloads "out" or "out_<variant>"; "outer" or
     * "output" is an ordinary overload and must not be held to out= rules. */
    bool out_ovl = strcmp(ovl, "out") == 0 || strncmp(ovl, "out_", 4) == 0;
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
                                   "TT_TAG_DATA_DEPENDENT_OUTPUT, TT_TAG_NEEDS_FIXED_STRIDE_ORDER "
                                   "and TT_TAG_POINTWISE)", fn, qual, unknown);
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

int tt_op_describe(const tt_op *op, char *buf, size_t n)
{
    if (!op || !op->schema) {
        int len = snprintf(buf, n, "%s (not defined)", op ? op->name : "(null)");
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
    return len;
}

unsigned tt_op_tags(const tt_op *op) { return op ? op->tags : 0; }

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

    pthread_rwlock_wrlock(&lock);
    tt_op *op = find_locked(qual);
    if (op && op->schema) {
        char have[512];
        tt_schema_print(op->schema, have, sizeof have);
        pthread_rwlock_unlock(&lock);
        char at[300];
        tt_error(TT_EEXIST, "%s: %s is already defined as '%s' (by library %s '%s' "
                            "#%d%s); the new definition was '%s'", fn, qual, have,
                 kind_name(op->def_lib->kind), op->def_lib->ns, op->def_lib->id,
                 at_str(op->def_where, at, sizeof at), spec->schema);
        goto fail;
    }
    if (!op) {
        op = tt__calloc(1, sizeof *op);
        char *name = op ? tt__strdup(qual) : NULL;
        char *label = name ? tt__strdup(qual) : NULL;
        if (!label || !push_ptr((void ***)&ops, &nops, &cap_ops, op)) {
            tt__free(label);
            tt__free(name);
            tt__free(op);
            pthread_rwlock_unlock(&lock);
            goto fail;
        }
        char *dot = strchr(label + strlen(lib->ns) + 2, '.');
        if (dot)
            *dot = '\0';
        op->name = name;
        op->label = label;
        op->builtin_id = -1;
    }
    op->schema = s;
    op->def_lib = lib;
    op->builtin = builtin;
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
    pthread_rwlock_unlock(&lock);
    return op;
fail:
    tt_schema_free(s);
    return NULL;
}

/* ----------------------------------------------------------- registration */

/* The defined op a registration call names (by name or handle), with the
 * library check. */
static tt_op *op_for_registration(const char *fn, tt_library *lib, tt_opref ref)
{
    tt_op *op = (tt_op *)ref.op;
    if (!op && !ref.name) {
        tt_error(TT_EINVAL, "%s: argument 'op' is NULL", fn);
        return NULL;
    }
    if (op && !op->schema) {
        tt_error(TT_ENOTFOUND, "%s: %s is no longer defined (the library that defined it "
                               "was freed)", fn, op->name);
        return NULL;
    }
    if (!op && !(op = tt_op_find(ref.name))) {
        char why[1024];
        snprintf(why, sizeof why, "%s", tt_errmsg() + strlen("tt_op_find: "));
        tt_error(TT_ENOTFOUND, "%s: %s; define it first with tt_custom_op_define", fn, why);
        return NULL;
    }
    if (lib && lib->kind != TT_LIB_IMPL && strcmp(lib->ns, tt_schema_ns(op->schema)) != 0) {
        tt_error(TT_EINVAL, "%s: library %s '%s' cannot register kernels for %s; use "
                            "an IMPL library for another namespace", fn,
                 kind_name(lib->kind), lib->ns, op->name);
        return NULL;
    }
    return op;
}

/* Installs k into slot unless taken; a taken slot's message says who
 * filled it and where. Caller holds the write lock. */
static tt_status fill_slot(const char *fn, const tt_op *op, kernel_slot *slot,
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

tt_status tt_register_kernel_at(tt_library *lib, tt_opref ref, const char *device_type,
                                tt_kernel_fn k, tt_srcloc loc)
{
    const char *fn = "tt_register_kernel";
    tt_op *op = op_for_registration(fn, lib, ref);
    if (!op)
        return tt_errcode();
    if (!k)
        return tt_error(TT_EINVAL, "%s: argument 'fn' is NULL", fn);
    uint32_t mask = 0;
    if (device_type) {
        tt_status st = parse_devices(fn, device_type, &mask);
        if (!st)
            st = device_kernel_check(fn, op->name, op->schema);
        if (st)
            return st;
    }
    pthread_rwlock_wrlock(&lock);
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

tt_status tt_register_fake_at(tt_library *lib, tt_opref ref, tt_kernel_fn k, tt_srcloc loc)
{
    const char *fn = "tt_register_fake";
    tt_op *op = op_for_registration(fn, lib, ref);
    if (!op)
        return tt_errcode();
    if (!k)
        return tt_error(TT_EINVAL, "%s: argument 'fn' is NULL", fn);
    pthread_rwlock_wrlock(&lock);
    tt_status st = fill_slot(fn, op, &op->fake, "a fake kernel", lib, k, loc, fn);
    pthread_rwlock_unlock(&lock);
    return st;
}

tt_status tt_autograd_fallthrough(tt_autograd_ctx *ctx, tt_tensor *const *grads, int ngrads,
                                  tt_tensor **grad_inputs, int ninputs)
{
    (void)ctx, (void)grads, (void)ngrads, (void)grad_inputs, (void)ninputs;
    return tt_error(TT_EINTERNAL, "tt_autograd_fallthrough: a marker for "
                                  "tt_register_autograd, not a backward to call");
}

tt_status tt_register_autograd_at(tt_library *lib, tt_opref ref, tt_backward_fn backward,
                                  tt_setup_context_fn setup_context, tt_srcloc loc)
{
    const char *fn = "tt_register_autograd";
    tt_op *op = op_for_registration(fn, lib, ref);
    if (!op)
        return tt_errcode();
    if (!backward)
        return tt_error(TT_EINVAL, "%s: argument 'backward' is NULL", fn);
    bool fallthrough = backward == tt_autograd_fallthrough;
    if (fallthrough && setup_context)
        return tt_error(TT_EINVAL, "%s: %s: the fallthrough takes no setup_context (it "
                                   "records nothing)", fn, op->name);
    tt_status st = fallthrough ? TT_OK : autograd_check(fn, op->name, op->schema, op->kind,
                                                        op->builtin);
    if (st)
        return st;
    pthread_rwlock_wrlock(&lock);
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
