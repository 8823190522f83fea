/* Internal: the op entry, frames and the dispatcher's per-thread state,
 * shared by registry.c, dispatch.c, frame.c and autograd.c. */
#ifndef TT_DISPATCH_IMPL_H
#define TT_DISPATCH_IMPL_H

#include "tensor_impl.h"

#define TT_MAX_ARGS 32
#define TT_MAX_RETURNS 8

/* A registration slot: what was registered and which library owns it. */
typedef struct {
    _Atomic(tt_kernel_fn) fn;
    tt_library *owner;
    tt_srcloc where; /* the registration call, for TT_EEXIST's message */
    const char *how; /* "tt_register_fake", "a 'meta' kernel", ... */
} kernel_slot;

typedef enum {
    TT_OPKIND_FUNCTIONAL, /* mutates nothing */
    TT_OPKIND_INPLACE,    /* name_(Tensor(a!) self, ...) -> Tensor(a!) */
    TT_OPKIND_OUT,        /* name.out(..., *, Tensor(a!) out) -> Tensor(a!) */
    TT_OPKIND_MUTABLE,    /* any other op that writes an argument */
} tt_opkind;

/* One definition of an op: what tt_custom_op_define made, plus the
 * registrations made on it since. Internal code runs calls on a definition
 * (frames, autograd nodes and checks hold one); users hold the op's handle.
 * A definition stays alive while it is its handle's current one, and after
 * that (its library freed, or the name defined again) until no call in
 * flight and no recorded autograd node uses it (registry.c). */
typedef struct tt_opdef tt_opdef;
struct tt_opdef {
    const tt_op *handle;
    const char *name;  /* the handle's: "ns::name" or "ns::name.overload" */
    const char *label; /* the handle's: "ns::name", how error messages name the op */
    tt_schema *schema; /* owned */
    tt_library *def_lib; /* the DEF or FRAGMENT library that defined it */
    bool builtin;
    int builtin_id;    /* its tt_builtin_id, or -1 for a user's op */
    bool nondiff;      /* outputs never require grad */
    bool saves_self;   /* TT_BUILTIN_SAVES_SELF (builtin_ops.h) */
    tt_opkind kind;
    uint32_t mutated;       /* bit i: argument i is written (a!) */
    uint32_t device_mask;   /* devices the spec's kernel serves */
    int nargs, nreturns;
    kernel_slot kernels[TT_DEVICE_COUNT];
    kernel_slot default_kernel; /* every device */
    /* bit d: device d's kernel is switched off (tt_op_set_kernel_enabled);
     * calls fall back to the default kernel */
    atomic_uint disabled;
    kernel_slot fake;
    _Atomic(tt_backward_fn) backward; /* tt_autograd_fallthrough: run unrecorded */
    tt_setup_context_fn setup_context;
    tt_library *autograd_owner;
    tt_srcloc autograd_where;
    tt_srcloc def_where;
    int device_arg; /* the first Device argument, or -1: picks the kernel
                       when no tensor is among the arguments */
    bool has_tensor_arg;
    unsigned tags; /* tt_tag bits */
    void *userdata;
    tt_opdef *next_retired; /* in its handle's retired list */
};

/* A handle: what tt_op_find and tt_custom_op_define return and users keep.
 * One per name, never freed, so a kept pointer never dangles: freeing the
 * library leaves the handle without a definition (a call through it fails
 * naming the op), defining the name again gives it a new one. Small, as it
 * is all that is left of a freed op. */
struct tt_op {
    char *name;  /* "ns::name" or "ns::name.overload" */
    char *label; /* "ns::name" */
    bool builtin; /* namespace tt: defined once, never freed, never pinned */
    int builtin_id; /* its tt_builtin_id, or -1 */
    _Atomic(tt_opdef *) def;     /* the current definition, NULL when undefined */
    atomic_long pins;            /* calls (and autograd nodes) using a definition */
    _Atomic(tt_opdef *) retired; /* old definitions waiting for pins to reach 0 */
};

/* The current definition of op, pinned so that it stays alive until the
 * matching tt__op_unpin; NULL (no pin) with TT_ENOTFOUND naming the op when
 * it is not defined. Built-ins are never freed and skip the pin. */
const tt_opdef *tt__op_pin(const tt_op *op);
/* Takes one more pin on a definition the caller has pinned (an autograd
 * node keeping the definition it was recorded with). */
void tt__op_pin_again(const tt_opdef *d);
void tt__op_unpin(const tt_opdef *d);

struct tt_library {
    tt_library_kind kind;
    char *ns;
    int id;
    tt_srcloc where; /* tt_library_new's caller */
};

struct tt_frame {
    const tt_opdef *op;
    const tt_value *args;
    int nargs;
    tt_value *outs;
    int nouts;
    bool fake; /* running the op's fake kernel */
};

/* Runs op below the modes and autograd: the fake or device kernel. */
tt_status tt__dispatch_backend(const tt_opdef *op, const tt_value *args, int nargs,
                               tt_value *outs, int nouts);
/* Runs op below the modes: autograd if it has something to record, else
 * the backend. */
tt_status tt__dispatch_below_modes(const tt_opdef *op, const tt_value *args,
                                   int nargs, tt_value *outs, int nouts);

/* autograd.c: whether a call needs recording, and the recording call. */
bool tt__autograd_wants(const tt_opdef *op, const tt_value *args, int nargs);
tt_status tt__autograd_call(const tt_opdef *op, const tt_value *args, int nargs,
                            tt_value *outs, int nouts);
bool tt__tensor_requires_grad(const tt_tensor *t);
extern _Thread_local int tt__autograd_off; /* > 0 inside kernels/backward */
extern _Thread_local bool tt__grad_disabled;

/* schema.c: marks argument i as written (Tensor(aN!)), for a schema whose
 * mutation comes from mutates_args. */
void tt__schema_mark_write(tt_schema *s, int i);

/* checked.c: runs a custom op's real kernel `k` with checked mode's
 * checks (undeclared writes, fake-kernel metadata). */
tt_status tt__checked_call(const tt_opdef *op, const tt_value *args, int nargs, tt_value *outs,
                           int nouts, tt_kernel_fn k);

/* "Tensor", "int[4]" for argument i of op, into buf. */
const char *tt__arg_type_str(const tt_opdef *op, int i, char *buf, size_t n);
/* Memory for the lists a call's binding makes (a scalar repeated for a
 * sized list), alive until the call ends: a small room, then the heap.
 * Zero `used` and `nheap` before use; tt__bind_scratch_free after. */
typedef struct {
    _Alignas(8) unsigned char room[512];
    size_t used;
    void *heap[TT_MAX_ARGS];
    int nheap;
} tt__bind_scratch;
void *tt__bind_room(tt__bind_scratch *sc, size_t bytes);
void tt__bind_scratch_free(tt__bind_scratch *sc);
/* Checks and completes a call's arguments against the schema into full
 * (defaults filled, scalars for sized lists repeated into sc). */
tt_status tt__bind_args(const tt_opdef *op, const tt_value *args, int nargs,
                        tt_value *full, tt__bind_scratch *sc);

#endif
