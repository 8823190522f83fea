/* The helpers the dispatcher suites share (test_dispatch.c,
 * test_modes.c): failing-call assertions, tensors and libraries that must
 * be made, ops defined in one line, and a fake kernel that reads data. */
#ifndef TT_DISPATCH_TEST_H
#define TT_DISPATCH_TEST_H

#include "tt_test.h"

/* A call that fails with `code` and a message containing `needle`. */
#define ck_assert_fails(call, code, needle)                                    \
    do {                                                                       \
        ck_assert_int_eq((call), (code));                                      \
        ck_assert_error((code), (needle));                                     \
    } while (0)
#define ck_assert_null_fails(call, code, needle)                               \
    do {                                                                       \
        ck_assert_ptr_null(call);                                              \
        ck_assert_error((code), (needle));                                     \
    } while (0)

static inline tt_tensor *vec(int n, const float *v)
{
    tt_tensor *t = tt_from_data(TT_SHAPE(n), TT_F32, v);
    ck_assert_msg(t != NULL, "tt_from_data: %s", tt_errmsg());
    return t;
}

static inline tt_library *lib_ok(tt_library_kind kind, const char *ns)
{
    tt_library *lib = tt_library_new(kind, ns);
    ck_assert_msg(lib != NULL, "tt_library_new(%s): %s", ns, tt_errmsg());
    return lib;
}

static inline tt_op *define_ok(tt_library *lib, tt_custom_op_spec spec)
{
    tt_op *op = tt_custom_op_define(lib, &spec);
    ck_assert_msg(op != NULL, "defining '%s' failed: %s", spec.schema, tt_errmsg());
    return op;
}

/* The common definition: a schema with a kernel for every device and a
 * fake kernel (either may be NULL). */
static inline tt_op *defop(tt_library *lib, const char *schema, tt_kernel_fn kernel, tt_kernel_fn fake)
{
    return define_ok(lib, (tt_custom_op_spec){.schema = schema, .kernel = kernel, .fake = fake});
}

static int peek_mode;

/* A fake kernel that (wrongly) reads data. */
static inline tt_status k_peek(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    if (st)
        return st;
    if (peek_mode == 0) {
        float *p = tt_data(x);
        if (!p)
            return tt_errcode();
    } else {
        double d;
        if ((st = tt_item(x, &d)))
            return st;
    }
    return tt_return(f, 0, tt_empty_like(x));
}

#endif
