/* libttodd.so: model libraries tt must refuse without crashing, for
 * tests/test_cli.c. Its table declares a function with no pointer and
 * one that is fine; tt_model_fns_empty is an empty table (tested through
 * --init only: tt reads the table under its documented name). */
#include <tensortrace.h>

static tt_status identity(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_clone(in[0]);
    return out[0] ? TT_OK : tt_errcode();
}

const tt_model_fn tt_model_fns[] = {
    {"no_pointer", NULL, 1, 1, "a row whose function is missing", "x"},
    {"identity", identity, 1, 0, "out = clone(x); noutputs 0 means 1", NULL},
    {0},
};
