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

struct tt_op {
    char *name;        /* "ns::name" or "ns::name.overload" */
    char *label;       /* "ns::name": how error messages name the op */
    tt_schema *schema; /* NULL until defined, and after its library is freed */
    tt_library *def_lib;
    bool builtin;
    int builtin_id;    /* its tt_builtin_id, or -1 for a user's op */
    bool nondiff;      /* outputs never require grad */
    tt_opkind kind;
    uint32_t mutated;       /* bit i: argument i is written (a!) */
    uint32_t device_mask;   /* devices the spec's kernel serves */
    int nargs, nreturns;
    kernel_slot kernels[TT_DEVICE_COUNT];
    kernel_slot default_kernel; /* every device */
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
};

struct tt_library {
    tt_library_kind kind;
    char *ns;
    int id;
    tt_srcloc where; /* tt_library_new's caller */
};

struct tt_frame {
    const tt_op *op;
    const tt_value *args;
    int nargs;
    tt_value *outs;
    int nouts;
    bool fake; /* running the op's fake kernel */
};

/* Runs op below the modes and autograd: the fake or device kernel. */
tt_status tt__dispatch_backend(const tt_op *op, const tt_value *args, int nargs,
                               tt_value *outs, int nouts);
/* Runs op below the modes: autograd if it has something to record, else
 * the backend. */
tt_status tt__dispatch_below_modes(const tt_op *op, const tt_value *args,
                                   int nargs, tt_value *outs, int nouts);

/* autograd.c: whether a call needs recording, and the recording call. */
bool tt__autograd_wants(const tt_op *op, const tt_value *args, int nargs);
tt_status tt__autograd_call(const tt_op *op, const tt_value *args, int nargs,
                            tt_value *outs, int nouts);
bool tt__tensor_requires_grad(const tt_tensor *t);
extern _Thread_local int tt__autograd_off; /* > 0 inside kernels/backward */
extern _Thread_local bool tt__grad_disabled;

/* schema.c: marks argument i as written (Tensor(aN!)), for a schema whose
 * mutation comes from mutates_args. */
void tt__schema_mark_write(tt_schema *s, int i);

/* checked.c: runs a custom op's real kernel `k` with checked mode's
 * checks (undeclared writes, fake-kernel metadata). */
tt_status tt__checked_call(const tt_op *op, const tt_value *args, int nargs, tt_value *outs,
                           int nouts, tt_kernel_fn k);

/* "Tensor", "int[4]" for argument i of op, into buf. */
const char *tt__arg_type_str(const tt_op *op, int i, char *buf, size_t n);
/* Checks and completes a call's arguments against the schema into full
 * (defaults filled). */
tt_status tt__bind_args(const tt_op *op, const tt_value *args, int nargs,
                        tt_value *full);

#endif
