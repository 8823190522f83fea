/* Symbolic tracing: input sizes become symbols (s0, s1, ...) whose example
 * values are the real sizes. Sizes 0 and 1 stay concrete, as PyTorch
 * specializes them (broadcasting and emptiness depend on them). Strides
 * are rebuilt from the symbolic sizes in the input's memory order. */
#include "trace_impl.h"

#include <stdlib.h>

tt_tensor *tt__symbolic_input(tracer *tr, tt_tensor *x)
{
    (void)tr;
    int nd = tt_ndim(x);
    const tt_size *sz = tt_sizes(x), *st = tt_strides(x);
    tt_size sizes[TT_MAX_DIMS], strides[TT_MAX_DIMS];
    int order[TT_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        sizes[d] = sz[d] >= 2 && !tt_size_is_sym(sz[d]) ? tt_sym_new("s", sz[d]) : sz[d];
        if (sizes[d] == 0 && sz[d] >= 2)
            return NULL; /* tt_sym_new failed (out of memory), error set */
        order[d] = d;
    }
    /* Innermost (smallest stride) first, stable, so a permuted input keeps
     * its layout. */
    for (int i = 1; i < nd; i++)
        for (int j = i; j > 0 && st[order[j]] < st[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    tt_size run = 1;
    for (int i = 0; i < nd; i++) {
        int d = order[i];
        strides[d] = run;
        run = tt_sym_mul(run, sizes[d]);
    }
    return tt_fake_empty_strided(nd, sizes, strides, tt_dtype_of(x));
}

void tt__symbolic_end(tracer *tr)
{
    (void)tr;
}
