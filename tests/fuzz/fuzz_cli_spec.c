/* Fuzz target: the `tt` tool's --input spec parser (tools/tt_cli.c). The
 * input is one spec. A refused spec has a message naming it; an accepted
 * one has sizes and values that agree (numel is the product of the sizes,
 * values exist when given) and becomes a fake tensor of exactly those
 * sizes, or a real one when it is small, or a clean error. */
#include "tt_cli.h"

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    char err[512];
    tt_cli_spec spec;
    if (tt_cli_spec_parse(text, &spec, err, sizeof err)) {
        FUZZ_CHECK(strncmp(err, "bad --input '", 13) == 0, "'%s' refused with '%s'", text, err);
        free(text);
        return 0;
    }
    FUZZ_CHECK(spec.ndim >= 0 && spec.ndim <= TT_MAX_DIMS, "'%s': ndim %d", text, spec.ndim);
    int64_t numel = 1;
    for (int d = 0; d < spec.ndim; d++) {
        FUZZ_CHECK(spec.sizes[d] >= 0, "'%s': size %d is negative", text, d);
        numel *= spec.sizes[d];
    }
    FUZZ_CHECK(numel == spec.numel, "'%s': numel %lld, sizes make %lld", text,
               (long long)spec.numel, (long long)numel);
    FUZZ_CHECK(!spec.has_values || spec.values, "'%s': values promised, none stored", text);
    for (int fake = 1; fake >= 0; fake--) {
        if (!fake && spec.numel > 4096 && !spec.has_values)
            break; /* random data for a huge tensor: not what this target tests */
        tt_clear_error();
        tt_tensor *t = tt_cli_spec_tensor(&spec, fake);
        if (!t) {
            FUZZ_CHECK(tt_errcode() != TT_OK && tt_errmsg()[0],
                       "'%s': no tensor and no error", text);
            continue;
        }
        FUZZ_CHECK(tt_ndim(t) == spec.ndim && tt_dtype_of(t) == spec.dtype,
                   "'%s': the tensor is not what the spec says", text);
        for (int d = 0; d < spec.ndim; d++)
            FUZZ_CHECK(tt_sizes(t)[d] == spec.sizes[d], "'%s': size %d differs", text, d);
        FUZZ_CHECK(tt_requires_grad(t) == spec.requires_grad, "'%s': requires_grad differs",
                   text);
        tt_release(t);
    }
    tt_cli_spec_clear(&spec);
    free(text);
    FUZZ_CHECK(tt_live_tensors() == 0, "%lld tensors leaked", (long long)tt_live_tensors());
    return 0;
}
