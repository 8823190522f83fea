/* Symbolic tracing: input sizes become symbols (s0, s1, ...) whose example
 * values are the real sizes, and every comparison of symbolic sizes made
 * while tracing is recorded as a guard. Sizes 0 and 1 stay concrete, as
 * PyTorch specializes them (broadcasting and emptiness depend on them).
 * Strides are rebuilt from the symbolic sizes in the input's memory order,
 * which is itself guarded. */
#include "trace_impl.h"

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
    tt_size strides[TT_MAX_DIMS];
    bool dynamic = tr->opts.dynamic_inputs <= 0 || s->ninputs < tr->opts.dynamic_inputs;
    in->ndim = nd;
    for (int d = 0; d < nd; d++) {
        in->concrete[d] = sz[d];
        in->sizes[d] = dynamic && sz[d] >= 2 && !tt_size_is_sym(sz[d]) ? tt_sym_new("s", sz[d])
                                                                       : sz[d];
        if (in->sizes[d] == 0 && sz[d] >= 2)
            return NULL; /* tt_sym_new failed (out of memory), error set */
        in->order[d] = d;
    }
    /* Innermost (smallest stride) first, stable, so a permuted input keeps
     * its layout. */
    for (int i = 1; i < nd; i++)
        for (int j = i; j > 0 && st[in->order[j]] < st[in->order[j - 1]]; j--) {
            int t = in->order[j];
            in->order[j] = in->order[j - 1];
            in->order[j - 1] = t;
        }
    tt_size run = 1;
    for (int i = 0; i < nd; i++) {
        int d = in->order[i];
        strides[d] = run;
        run = tt_sym_mul(run, in->sizes[d]);
    }
    tt_tensor *v = tt_fake_empty_strided(nd, in->sizes, strides, tt_dtype_of(x));
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
