/* Symbolic tracing: input sizes become symbols (s0, s1, ...) whose example
 * values are the real sizes, and every comparison of symbolic sizes made
 * while tracing is recorded as a guard. Sizes 0 and 1 stay concrete, as
 * PyTorch specializes them (broadcasting and emptiness depend on them).
 * Strides and the storage offset keep the input's layout, written in its
 * symbolic sizes where they can be (sym_layout), and are guarded. */
#include "trace_impl.h"
#include "tensor_impl.h"

#include <stdlib.h>
#include <string.h>

static sym_state *state_of(tracer *tr)
{
    if (!tr->sym) {
        tr->sym = tt__calloc(1, sizeof *tr->sym);
        if (!tr->sym)
            tt_error(TT_ENOMEM, "out of memory starting a symbolic trace");
    }
    return tr->sym;
}

static void record_guard(void *ud, tt_guard_op op, tt_size a, tt_size b, bool result)
{
    sym_state *s = ud;
    if (s->nguards == s->cap_guards) {
        int nc = s->cap_guards ? s->cap_guards * 2 : 16;
        sym_guard *ng = tt__realloc(s->guards, sizeof *ng * (size_t)s->cap_guards,
                                     sizeof *ng * (size_t)nc);
        if (!ng) {
            s->oom = true;
            return;
        }
        s->guards = ng;
        s->cap_guards = nc;
    }
    /* The same comparison twice is one guard. */
    for (int i = 0; i < s->nguards; i++)
        if (s->guards[i].op == op && s->guards[i].a == a && s->guards[i].b == b)
            return;
    s->guards[s->nguards++] = (sym_guard){op, a, b, result};
}

void tt__symbolic_start(tracer *tr)
{
    if (tr->kind == TT_TRACE_SYMBOLIC && state_of(tr))
        tt_sym_set_guard_hook(record_guard, tr->sym);
}

void tt__symbolic_stop(tracer *tr)
{
    if (tr->kind == TT_TRACE_SYMBOLIC)
        tt_sym_set_guard_hook(NULL, NULL);
}

/* An input's layout as expressions of its symbolic sizes, as dynamo's
 * _create_symbolic_sizes_strides_storage_offset writes them. Walking the
 * dims innermost first (smallest stride), each dim of size >= 2 offers a
 * candidate: the value stride*size, with the expression stride*symbol; a
 * later stride equal to a candidate's value takes its expression. So a
 * dense input, permuted or not, gets products of its symbols in its own
 * dim order; an expanded dim keeps stride 0; a size-1 dim takes the
 * candidate its stride matches (no kernel reads that stride, but views
 * and outputs eager makes from the input keep it).
 *
 * A stride that matches no candidate (the 2 of a slice with step 2, the
 * row length of a column slice of a wider matrix), where dynamo makes a
 * stride symbol, stays a constant: guarded as such, and a factor of the
 * candidates after it (the rows of a step-2 slice are s1*2 apart). This is
 * the simplest design that is correct: the sizes stay symbolic in every
 * layout, so a new batch size reuses the plan, and a call whose layout
 * the constants do not describe fails the guard and traces again instead
 * of running on a wrong layout.
 *
 * The storage offset is its own symbol, as in dynamo, when it is 2 or
 * more (0 and 1 are specialized, as sizes are): a loop over mini-batches
 * narrowed from one tensor passes a new offset each call, which a
 * constant would trace again every time. Returns false (error set) when
 * the arithmetic fails. */
static bool sym_layout(sym_input *in, const tt_size *st, tt_size offset, bool dynamic)
{
    int nd = in->ndim;
    int64_t cval[TT_MAX_DIMS + 1];
    tt_size cexpr[TT_MAX_DIMS + 1];
    int nc = 0;
    cval[nc] = 1;
    cexpr[nc++] = 1;
    for (int i = 0; i < nd; i++) {
        int d = in->order[i];
        tt_size e = st[d];
        for (int c = 0; c < nc && st[d] != 0; c++)
            if (cval[c] == st[d]) {
                e = cexpr[c];
                break;
            }
        in->strides[d] = e;
        int64_t v;
        if (st[d] == 0 || in->concrete[d] < 2 ||
            __builtin_mul_overflow(st[d], in->concrete[d], &v))
            continue;
        /* -1 on an arithmetic error, 0 out of memory (the product of a
         * nonzero stride and a size >= 2 is never 0); the error is set. */
        tt_size ex = tt_sym_mul(e, in->sizes[d]);
        if (ex == -1 || ex == 0)
            return false;
        cval[nc] = v;
        cexpr[nc++] = ex;
    }
    in->offset = dynamic && offset >= 2 ? tt_sym_new("s", offset) : offset;
    return in->offset != 0 || offset == 0; /* 0: tt_sym_new failed, error set */
}

tt_tensor *tt__symbolic_input(tracer *tr, tt_tensor *x)
{
    sym_state *s = state_of(tr);
    if (!s)
        return NULL;
    if (s->ninputs == s->cap_inputs) {
        /* The entry points bound the inputs at TT_TRACE_MAX_INPUTS, far
         * below where the doubling could overflow an int. */
        int nc = s->cap_inputs ? s->cap_inputs * 2 : 16;
        sym_input *ni = tt__realloc(s->inputs, sizeof *ni * (size_t)s->cap_inputs,
                                    sizeof *ni * (size_t)nc);
        if (!ni) {
            tt_error(TT_ENOMEM, "tt_trace: out of memory making symbolic input %d",
                     s->ninputs);
            return NULL;
        }
        s->inputs = ni;
        s->cap_inputs = nc;
    }
    sym_input *in = &s->inputs[s->ninputs];
    int nd = tt_ndim(x);
    const tt_size *sz = tt_sizes(x), *st = tt_strides(x);
    bool dynamic = tr->opts.dynamic_inputs <= 0 || s->ninputs < tr->opts.dynamic_inputs;
    /* A fake input that is already symbolic keeps its metadata: its
     * handles have no order to sort by. */
    bool keep = tt_size_is_sym(tt_storage_offset(x));
    for (int d = 0; d < nd; d++)
        keep |= tt_size_is_sym(sz[d]) || tt_size_is_sym(st[d]);
    bool made = false;
    in->ndim = nd;
    for (int d = 0; d < nd; d++) {
        in->concrete[d] = keep ? tt_sym_hint(sz[d]) : sz[d];
        in->sizes[d] = dynamic && !keep && sz[d] >= 2 ? tt_sym_new("s", sz[d]) : sz[d];
        if (in->sizes[d] == 0 && sz[d] >= 2)
            return NULL; /* tt_sym_new failed (out of memory), error set */
        made |= in->sizes[d] != sz[d];
        in->order[d] = d;
    }
    /* Innermost (smallest stride) first, stable, so a permuted input keeps
     * its layout. */
    for (int i = 1; i < nd && !keep; i++)
        for (int j = i; j > 0 && st[in->order[j]] < st[in->order[j - 1]]; j--) {
            int t = in->order[j];
            in->order[j] = in->order[j - 1];
            in->order[j - 1] = t;
        }
    if (keep) {
        memcpy(in->strides, st, sizeof *st * (size_t)nd);
        in->offset = tt_storage_offset(x);
    } else if (!sym_layout(in, st, tt_storage_offset(x), dynamic)) {
        return NULL;
    }
    made |= in->offset != tt_storage_offset(x);
    tt_tensor *v;
    if (!made) {
        /* No symbol: the layout is x's, constants all; so is the storage
         * (a fake-mode input). */
        v = tt_fake_like(x);
    } else {
        /* A symbolic extent has no byte count: its fake storage records
         * 0, as tt_fake_empty_strided's does. */
        tt_tensor *f = tt_fake_empty_strided(nd, in->sizes, in->strides, tt_dtype_of(x));
        v = f && in->offset != 0 ? tt__make_view(f, nd, in->sizes, in->strides, in->offset)
                                 : tt_retain(f);
        tt_release(f);
    }
    if (v)
        s->ninputs++;
    return v;
}

void tt__symbolic_end(tracer *tr)
{
    if (!tr->sym)
        return;
    tt__free(tr->sym->guards);
    tt__free(tr->sym->inputs);
    tt__free(tr->sym);
    tr->sym = NULL;
}
