/* Internal: the custom-op contract checks, one implementation each, used
 * by the dispatcher (aliasing at every call of a custom op), checked mode
 * (runtime/checked.c) and opcheck (tracer/opcheck.c). Not installed.
 *
 * Each check writes what it found as a sentence without the op's name
 * ("output 0 is argument 'x' (#1) itself, ..."), so each caller puts its
 * own prefix in front ("mylib::f: ", "mylib::f: checked mode ...: ") or
 * none (an opcheck report's entry). */
#ifndef TT_CONTRACT_IMPL_H
#define TT_CONTRACT_IMPL_H

#include "tt_runtime.h"

/* True (with the sentence in why) when an output of a call of op shares
 * storage with an argument and its schema s declares no alias between them
 * (Tensor(a) / Tensor(a!) on both), or two outputs share storage and are
 * not both declared aliases: PyTorch's custom_op rule "outputs may not
 * alias any inputs or other returns". A storage compare per pair. */
bool tt__alias_violation(const tt_schema *s, const tt_value *args, int nargs,
                         const tt_value *outs, int nouts, char *why, size_t n);

/* True (with the sentence in why) when the fake kernel's outputs alias
 * differently from the real kernel's: for each output, the arguments it
 * shares storage with, and the earlier outputs it shares storage with.
 * rargs/routs are the real call's, fargs/fouts the fake call's (the same
 * argument positions, fake copies). */
bool tt__alias_mismatch(const tt_schema *s, const tt_value *rargs, const tt_value *routs,
                        const tt_value *fargs, const tt_value *fouts, int nargs,
                        int nouts, char *why, size_t n);

/* Copies of the tensor arguments (list members too) that the schema does
 * not mark written, taken before a kernel runs, to find undeclared writes
 * after it: values, sizes, strides and offset. Fake tensors are compared
 * by metadata only. */
typedef struct tt__snapshots tt__snapshots;
/* NULL with the error set (out of memory). The caller frees it. */
tt__snapshots *tt__snapshots_take(const tt_schema *s, const tt_value *args, int nargs);
/* True (with the sentence in why) when a snapshotted argument changed:
 * "the kernel wrote argument 'output' (#2), which the schema does not mark
 * written: 6 of its 6 elements changed (...); declare it ...". A failure
 * to read a tensor back is an error (returns true, status in *st). */
bool tt__snapshots_changed(const tt__snapshots *s, char *why, size_t n, tt_status *st);
void tt__snapshots_free(tt__snapshots *s);

#endif
