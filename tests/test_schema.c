/* The schema language (parse, print, round trip, rejections with their
 * columns) and the boxed-value helpers. */
#include "tt_test.h"

#include <stdio.h>
#include <stdlib.h>

/* A kernel returning a Tensor?[] of three: ones, None, zeros. */
static tt_status three_kernel(tt_frame *f)
{
    tt_tensor *parts[3] = {tt_ones(TT_SHAPE(3), TT_F64), NULL, tt_zeros(TT_SHAPE(1), TT_I32)};
    return tt_return_tensors(f, 0, 3, parts);
}

static char *print_schema(const tt_schema *s)
{
    int n = tt_schema_print(s, NULL, 0);
    ck_assert_int_gt(n, 0);
    char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_int_eq(tt_schema_print(s, buf, (size_t)n + 1), n);
    ck_assert_uint_eq(strlen(buf), (size_t)n);
    return buf;
}

static tt_schema *parse_ok(const char *text)
{
    tt_schema *s = tt_schema_parse(text);
    ck_assert_msg(s != NULL, "'%s' did not parse: %s", text, tt_errmsg());
    return s;
}

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool value_eq(const tt_value *a, const tt_value *b)
{
    if (a->kind != b->kind || a->n != b->n)
        return false;
    switch (a->kind) {
    case TT_V_NONE: return true;
    case TT_V_INT: return a->u.i == b->u.i;
    case TT_V_FLOAT: return memcmp(&a->u.f, &b->u.f, sizeof(double)) == 0;
    case TT_V_BOOL: return a->u.b == b->u.b;
    case TT_V_STR: return strcmp(a->u.s, b->u.s) == 0;
    case TT_V_DTYPE: return a->u.dtype == b->u.dtype;
    case TT_V_DEVICE: return a->u.device == b->u.device;
    case TT_V_INTS: return a->n == 0 || memcmp(a->u.ints, b->u.ints, sizeof(int64_t) * (size_t)a->n) == 0;
    case TT_V_FLOATS: return a->n == 0 || memcmp(a->u.floats, b->u.floats, sizeof(double) * (size_t)a->n) == 0;
    case TT_V_BOOLS: return a->n == 0 || memcmp(a->u.bools, b->u.bools, sizeof(bool) * (size_t)a->n) == 0;
    default: return false;
    }
}

static void assert_arg_eq(const tt_arg *a, const tt_arg *b, const char *what)
{
    ck_assert_msg(strcmp(a->name, b->name) == 0, "%s: name %s vs %s", what, a->name, b->name);
    ck_assert_msg(a->type.base == b->type.base && a->type.optional == b->type.optional &&
                      a->type.is_list == b->type.is_list &&
                      a->type.elem_optional == b->type.elem_optional &&
                      a->type.list_size == b->type.list_size,
                  "%s '%s': types differ", what, a->name);
    ck_assert_msg(a->kwarg_only == b->kwarg_only, "%s '%s': kwarg_only", what, a->name);
    ck_assert_msg(a->has_default == b->has_default, "%s '%s': has_default", what, a->name);
    if (a->has_default)
        ck_assert_msg(value_eq(&a->default_value, &b->default_value),
                      "%s '%s': defaults differ", what, a->name);
    ck_assert_msg(str_eq(a->alias_set, b->alias_set) && a->is_write == b->is_write &&
                      a->alias_after_wildcard == b->alias_after_wildcard,
                  "%s '%s': alias annotations differ", what, a->name);
}

static void assert_schema_eq(const tt_schema *a, const tt_schema *b)
{
    ck_assert_str_eq(tt_schema_ns(a), tt_schema_ns(b));
    ck_assert_str_eq(tt_schema_name(a), tt_schema_name(b));
    ck_assert_str_eq(tt_schema_overload(a), tt_schema_overload(b));
    ck_assert_int_eq(tt_schema_nargs(a), tt_schema_nargs(b));
    ck_assert_int_eq(tt_schema_nreturns(a), tt_schema_nreturns(b));
    for (int i = 0; i < tt_schema_nargs(a); i++)
        assert_arg_eq(tt_schema_arg(a, i), tt_schema_arg(b, i), "argument");
    for (int i = 0; i < tt_schema_nreturns(a); i++)
        assert_arg_eq(tt_schema_return(a, i), tt_schema_return(b, i), "return");
}

/* ------------------------------------------------------------ valid */

/* Input text, and its canonical print (NULL: the input is canonical). */
static const struct {
    const char *text, *canonical;
} valid[] = {
    {"mylib::crop(Tensor pic, int[4] box) -> Tensor", NULL},
    {"tt::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", NULL},
    {"mylib::sin_(Tensor(a!) self) -> Tensor(a!)", NULL},
    {"mylib::sin.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)", NULL},
    {"mylib::mutate(Tensor(a!) x, Tensor(b!) y) -> ()", NULL},
    {"mylib::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", NULL},
    {"mylib::split(Tensor self, int[] sizes, int dim=0) -> Tensor[]", NULL},
    {"mylib::conv(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
     "int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor", NULL},
    {"mylib::norm(Tensor x, float eps=1e-05, float momentum=0.1) -> Tensor", NULL},
    {"mylib::sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", NULL},
    {"mylib::loss(Tensor input, Tensor target, str reduction=\"mean\") -> Tensor", NULL},
    {"mylib::loss2(Tensor input, str reduction='sum') -> Tensor",
     "mylib::loss2(Tensor input, str reduction=\"sum\") -> Tensor"},
    {"mylib::index(Tensor self, Tensor?[] indices) -> Tensor", NULL},
    {"mylib::cat(Tensor[] tensors, int dim=0) -> Tensor", NULL},
    {"mylib::view(Tensor(a) self, SymInt[] size) -> Tensor(a)", NULL},
    {"mylib::nothing() -> ()", NULL},
    {"mylib::pair(Tensor x) -> (Tensor, Tensor)", NULL},
    {"mylib::full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None) -> Tensor", NULL},
    {"mylib::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", NULL},
    {"mylib::pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor", NULL},
    {"mylib::arange(Scalar end, *, ScalarType dtype=long, Device device=\"cpu\") -> Tensor",
     "mylib::arange(Scalar end, *, ScalarType dtype=int64, Device device=\"cpu\") -> Tensor"},
    {"mylib::f(int x=-1, float y=-1.5, Scalar z=2.5, bool b=True) -> int", NULL},
    {"mylib::g(int[] dims=[0, 1], float[] w=[0.5, 1.0, 2], bool[3] mask=[True, False, True], int[] e=[]) -> float",
     "mylib::g(int[] dims=[0, 1], float[] w=[0.5, 1.0, 2.0], bool[3] mask=[True, False, True], int[] e=[]) -> float"},
    {"mylib::alias_wild(Tensor(a -> *) x) -> Tensor(a)", NULL},
    {"mylib::bang(Tensor! x) -> ()", NULL},
    {"mylib::lists_out(Tensor[] xs, *, Tensor(a!)[] out) -> ()", NULL},
    {"mylib::opt_list(int[]? sizes=None, Tensor[]? ts=None) -> bool", NULL},
    {"  mylib::ws ( Tensor  x ,int [ 2 ] k = 3 )->( Tensor a , Tensor b )  ",
     "mylib::ws(Tensor x, int[2] k=3) -> (Tensor a, Tensor b)"},
    {"mylib::scalar_list(Scalar[] vals=[1, 2.5]) -> Tensor",
     "mylib::scalar_list(Scalar[] vals=[1.0, 2.5]) -> Tensor"},
    {"mylib::sym(SymInt n, SymInt[2] s=[1, 2]) -> SymInt", NULL},
    {"mylib::opt_sized(int[2]? k=1) -> ()", NULL},
    {"mylib::sized_list(int[2] k=[3, 3], bool[2] m=True) -> ()",
     "mylib::sized_list(int[2] k=3, bool[2] m=True) -> ()"},
    {"mylib::named(Tensor x) -> Tensor out", NULL},
    /* A single parenthesized return prints without the parentheses. */
    {"mylib::one(Tensor x) -> (Tensor out)", "mylib::one(Tensor x) -> Tensor out"},
    {"mylib::strs(str a='it\\'s \"q\"\\n\\t\\\\') -> ()",
     "mylib::strs(str a=\"it's \\\"q\\\"\\n\\t\\\\\") -> ()"},
    {"mylib::list_after_default(int x=1, int[] sizes) -> ()", NULL},
    {"mylib::kw(int x=1, *, int y) -> ()", NULL},
    {"mylib::fl(float a=0.1, float b=1e-10, float c=123456789.0, float d=1e+20, float e=.5, float f=3) -> ()",
     "mylib::fl(float a=0.1, float b=1e-10, float c=123456789.0, float d=1e+20, float e=0.5, float f=3.0) -> ()"},
    {"mylib::scalars(Scalar a=True, Scalar b=-3, Scalar c=1e3) -> Scalar",
     "mylib::scalars(Scalar a=True, Scalar b=-3, Scalar c=1000.0) -> Scalar"},
    {"mylib::dtypes(ScalarType a=float, ScalarType b=f64, ScalarType? c=bool, ScalarType d=uint8) -> ()",
     "mylib::dtypes(ScalarType a=float32, ScalarType b=float64, ScalarType? c=bool, ScalarType d=uint8) -> ()"},
    {"mylib::opt_alias(Tensor(a!)? out=None) -> ()", NULL},
    {"mylib::out2.out(Tensor self, *, Tensor(a!) values, Tensor(b!) indices) -> "
     "(Tensor(a!) values, Tensor(b!) indices)", NULL},
    {"mylib::devices(Device a=\"cuda\", Device? b=\"meta\") -> ()", NULL},
    /* PyTorch's own forms: dtype codes, Layout, MemoryFormat, [] for a
     * sized list ("unset"), int[1] of any length. */
    {"mylib::e(SymInt[] size, *, ScalarType? dtype=4, Layout? layout=0, MemoryFormat? "
     "memory_format=1, ScalarType d2=7) -> Tensor", NULL},
    {"mylib::pool(Tensor self, int[2] kernel_size, int[2] stride=[], int[1] dims=[], "
     "int[1] two=[0, 1]) -> Tensor", NULL},
    /* A repeated value prints as one only when the list has the size's
     * length: [True, True] for bool[1] stays a list, or it would parse
     * back as [True] (the schema fuzzer found this). */
    {"mylib::g(bool[1] mask=[True, True], int[2] s=[3, 3], int[2] u=4) -> ()",
     "mylib::g(bool[1] mask=[True, True], int[2] s=3, int[2] u=4) -> ()"},
};

START_TEST(test_valid_round_trip)
{
    const char *text = valid[_i].text;
    const char *canon = valid[_i].canonical ? valid[_i].canonical : text;
    tt_schema *s = parse_ok(text);
    char *p1 = print_schema(s);
    ck_assert_str_eq(p1, canon);
    tt_schema *s2 = parse_ok(p1);
    assert_schema_eq(s, s2);
    char *p2 = print_schema(s2);
    ck_assert_str_eq(p1, p2);
    /* A short buffer is cut, NUL-terminated, and the length is the full one. */
    char small[8];
    ck_assert_int_eq(tt_schema_print(s, small, sizeof small), (int)strlen(p1));
    ck_assert_uint_eq(strlen(small), 7);
    ck_assert_int_eq(strncmp(small, p1, 7), 0);
    free(p1);
    free(p2);
    tt_schema_free(s);
    tt_schema_free(s2);
}
END_TEST

START_TEST(test_structure_names_and_kwargs)
{
    tt_schema *s = parse_ok("tt::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
    ck_assert_str_eq(tt_schema_ns(s), "tt");
    ck_assert_str_eq(tt_schema_name(s), "add");
    ck_assert_str_eq(tt_schema_overload(s), "Tensor");
    ck_assert_int_eq(tt_schema_nargs(s), 3);
    ck_assert_int_eq(tt_schema_nreturns(s), 1);
    const tt_arg *self = tt_schema_arg(s, 0), *alpha = tt_schema_arg(s, 2);
    ck_assert_str_eq(self->name, "self");
    ck_assert_int_eq(self->type.base, TT_T_TENSOR);
    ck_assert(!self->kwarg_only && !self->has_default && !self->alias_set && !self->is_write);
    ck_assert(alpha->kwarg_only && alpha->has_default);
    ck_assert_int_eq(alpha->type.base, TT_T_SCALAR);
    ck_assert_int_eq(alpha->default_value.kind, TT_V_INT);
    ck_assert_int_eq(alpha->default_value.u.i, 1);
    ck_assert_str_eq(tt_schema_return(s, 0)->name, "");
    ck_assert_ptr_null(tt_schema_arg(s, 3));
    ck_assert_ptr_null(tt_schema_arg(s, -1));
    ck_assert_ptr_null(tt_schema_return(s, 1));
    ck_assert(!tt_schema_is_mutable(s));
    tt_schema_free(s);

    s = parse_ok("mylib::crop(Tensor pic, int[4] box) -> Tensor");
    ck_assert_str_eq(tt_schema_overload(s), "");
    const tt_arg *box = tt_schema_arg(s, 1);
    ck_assert(box->type.is_list && !box->type.optional);
    ck_assert_int_eq(box->type.base, TT_T_INT);
    ck_assert_int_eq(box->type.list_size, 4);
    tt_schema_free(s);
}
END_TEST

START_TEST(test_structure_alias)
{
    tt_schema *s = parse_ok("mylib::sin_(Tensor(a!) self) -> Tensor(a!)");
    const tt_arg *a = tt_schema_arg(s, 0), *r = tt_schema_return(s, 0);
    ck_assert_str_eq(a->alias_set, "a");
    ck_assert(a->is_write && !a->alias_after_wildcard);
    ck_assert_str_eq(r->alias_set, "a");
    ck_assert(r->is_write);
    ck_assert(tt_schema_is_mutable(s));
    tt_schema_free(s);

    s = parse_ok("mylib::v(Tensor(a) x, Tensor(b -> *) y, Tensor! z, Tensor(c!)[] w) -> Tensor(a)");
    ck_assert_str_eq(tt_schema_arg(s, 0)->alias_set, "a");
    ck_assert(!tt_schema_arg(s, 0)->is_write);
    ck_assert_str_eq(tt_schema_arg(s, 1)->alias_set, "b");
    ck_assert(tt_schema_arg(s, 1)->alias_after_wildcard && !tt_schema_arg(s, 1)->is_write);
    ck_assert_ptr_null(tt_schema_arg(s, 2)->alias_set);
    ck_assert(tt_schema_arg(s, 2)->is_write);
    ck_assert_str_eq(tt_schema_arg(s, 3)->alias_set, "c");
    ck_assert(tt_schema_arg(s, 3)->is_write && tt_schema_arg(s, 3)->type.is_list);
    ck_assert(tt_schema_is_mutable(s));
    ck_assert_str_eq(tt_schema_return(s, 0)->alias_set, "a");
    ck_assert(!tt_schema_return(s, 0)->is_write);
    tt_schema_free(s);

    /* A view that is not written does not make the op mutable. */
    s = parse_ok("mylib::view(Tensor(a) self, SymInt[] size) -> Tensor(a)");
    ck_assert(!tt_schema_is_mutable(s));
    tt_schema_free(s);
    /* Neither does a write annotation on a return only. */
    s = parse_ok("mylib::odd(Tensor x) -> Tensor(a!)");
    ck_assert(!tt_schema_is_mutable(s));
    tt_schema_free(s);
}
END_TEST

START_TEST(test_structure_defaults)
{
    tt_schema *s = parse_ok(
        "mylib::conv(Tensor input, Tensor? bias=None, int[2] stride=1, int[3] pad=[0, 1, 2], "
        "*, ScalarType? dtype=None, str reduce=\"mean\", float eps=1e-05, int k=-7, "
        "bool flag=True, ScalarType dt=long, Device dev=\"meta\", float[] w=[0.5, 2], "
        "bool[2] m=[True, False], int[] e=[], Scalar s=2.5, SymInt n=3) -> (Tensor values, Tensor indices)");
    const tt_arg *a;
    a = tt_schema_arg(s, 1);
    ck_assert(a->type.optional && a->has_default);
    ck_assert_int_eq(a->default_value.kind, TT_V_NONE);
    a = tt_schema_arg(s, 2); /* int[2] stride=1 means [1, 1] */
    ck_assert_int_eq(a->default_value.kind, TT_V_INTS);
    ck_assert_int_eq(a->default_value.n, 2);
    ck_assert_int_eq(a->default_value.u.ints[0], 1);
    ck_assert_int_eq(a->default_value.u.ints[1], 1);
    ck_assert(!a->kwarg_only);
    a = tt_schema_arg(s, 3);
    ck_assert_int_eq(a->default_value.n, 3);
    ck_assert_int_eq(a->default_value.u.ints[2], 2);
    a = tt_schema_arg(s, 4);
    ck_assert(a->kwarg_only);
    ck_assert_int_eq(a->type.base, TT_T_SCALARTYPE);
    ck_assert(a->type.optional && !a->type.is_list);
    ck_assert_int_eq(a->default_value.kind, TT_V_NONE);
    a = tt_schema_arg(s, 5);
    ck_assert_int_eq(a->default_value.kind, TT_V_STR);
    ck_assert_str_eq(a->default_value.u.s, "mean");
    a = tt_schema_arg(s, 6);
    ck_assert_int_eq(a->default_value.kind, TT_V_FLOAT);
    ck_assert_double_eq(a->default_value.u.f, 1e-05);
    a = tt_schema_arg(s, 7);
    ck_assert_int_eq(a->default_value.kind, TT_V_INT);
    ck_assert_int_eq(a->default_value.u.i, -7);
    a = tt_schema_arg(s, 8);
    ck_assert_int_eq(a->default_value.kind, TT_V_BOOL);
    ck_assert(a->default_value.u.b);
    a = tt_schema_arg(s, 9);
    ck_assert_int_eq(a->default_value.kind, TT_V_DTYPE);
    ck_assert_int_eq(a->default_value.u.dtype, TT_I64);
    a = tt_schema_arg(s, 10);
    ck_assert_int_eq(a->default_value.kind, TT_V_DEVICE);
    ck_assert_int_eq(a->default_value.u.device, TT_DEV_META);
    a = tt_schema_arg(s, 11);
    ck_assert_int_eq(a->default_value.kind, TT_V_FLOATS);
    ck_assert_int_eq(a->default_value.n, 2);
    ck_assert_double_eq(a->default_value.u.floats[0], 0.5);
    ck_assert_double_eq(a->default_value.u.floats[1], 2.0);
    a = tt_schema_arg(s, 12);
    ck_assert_int_eq(a->default_value.kind, TT_V_BOOLS);
    ck_assert(a->default_value.u.bools[0] && !a->default_value.u.bools[1]);
    a = tt_schema_arg(s, 13);
    ck_assert_int_eq(a->default_value.kind, TT_V_INTS);
    ck_assert_int_eq(a->default_value.n, 0);
    a = tt_schema_arg(s, 14);
    ck_assert_int_eq(a->default_value.kind, TT_V_FLOAT);
    ck_assert_double_eq(a->default_value.u.f, 2.5);
    a = tt_schema_arg(s, 15);
    ck_assert_int_eq(a->type.base, TT_T_SYMINT);
    ck_assert_int_eq(a->default_value.kind, TT_V_INT);
    ck_assert_int_eq(tt_schema_nreturns(s), 2);
    ck_assert_str_eq(tt_schema_return(s, 0)->name, "values");
    ck_assert_str_eq(tt_schema_return(s, 1)->name, "indices");
    ck_assert(!tt_schema_return(s, 1)->kwarg_only);
    tt_schema_free(s);

    s = parse_ok("mylib::idx(Tensor self, Tensor?[] indices, int[]? sizes=None, Scalar[] v=[1, 2]) -> Tensor[]");
    a = tt_schema_arg(s, 1);
    ck_assert(a->type.is_list && a->type.elem_optional && !a->type.optional);
    a = tt_schema_arg(s, 2);
    ck_assert(a->type.is_list && a->type.optional && !a->type.elem_optional);
    ck_assert_int_eq(a->type.list_size, 0);
    a = tt_schema_arg(s, 3); /* Scalar lists are kept as floats */
    ck_assert_int_eq(a->default_value.kind, TT_V_FLOATS);
    ck_assert_double_eq(a->default_value.u.floats[0], 1.0);
    ck_assert(tt_schema_return(s, 0)->type.is_list);
    tt_schema_free(s);

    /* Strings unescape, and print back escaped. */
    s = parse_ok("mylib::esc(str a='tab\\there', str b=\"q\\\"\\\\\", str c='\\101\\n') -> ()");
    ck_assert_str_eq(tt_schema_arg(s, 0)->default_value.u.s, "tab\there");
    ck_assert_str_eq(tt_schema_arg(s, 1)->default_value.u.s, "q\"\\");
    ck_assert_str_eq(tt_schema_arg(s, 2)->default_value.u.s, "A\n");
    tt_schema_free(s);
}
END_TEST

/* mutates_args annotates the schema it names, as custom_op infers the
 * (a!) annotations. */
START_TEST(test_mark_write)
{
    tt_library *lib = tt_library_new(TT_LIB_DEF, "markw");
    ck_assert_ptr_nonnull(lib);
    tt_op *op = tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "markw::f(Tensor x, Tensor y) -> ()", .mutates_args = "y"});
    ck_assert_ptr_nonnull(op);
    const tt_schema *s = tt_op_schema(op);
    ck_assert(tt_schema_is_mutable(s));
    ck_assert_ptr_null(tt_schema_arg(s, 0)->alias_set);
    ck_assert_str_eq(tt_schema_arg(s, 1)->alias_set, "a1");
    char buf[128];
    tt_schema_print(s, buf, sizeof buf);
    ck_assert_str_eq(buf, "markw::f(Tensor x, Tensor(a1!) y) -> ()");
    tt_library_free(lib);
}
END_TEST

/* A long schema and a large sized-list default: every growth path of the
 * parser's memory (argument arrays, list buffers, a second arena chunk). */
static char *big_schema(void)
{
    size_t cap = 8192, len = 0;
    char *t = malloc(cap);
    ck_assert_ptr_nonnull(t);
    len += (size_t)snprintf(t + len, cap - len, "big::op.ovl(Tensor(a!) self");
    for (int i = 0; i < 20; i++)
        len += (size_t)snprintf(t + len, cap - len, ", int a%d=%d", i, i);
    len += (size_t)snprintf(t + len, cap - len, ", *, int[] l=[");
    for (int i = 0; i < 40; i++)
        len += (size_t)snprintf(t + len, cap - len, "%s%d", i ? ", " : "", i);
    len += (size_t)snprintf(t + len, cap - len,
                            "], int[300] rep=5, str s=\"%s\") -> (", "a string default");
    for (int i = 0; i < 10; i++)
        len += (size_t)snprintf(t + len, cap - len, "%sTensor r%d", i ? ", " : "", i);
    snprintf(t + len, cap - len, ")");
    return t;
}

START_TEST(test_big_schema)
{
    char *text = big_schema();
    tt_schema *s = parse_ok(text);
    ck_assert_int_eq(tt_schema_nargs(s), 24);
    ck_assert_int_eq(tt_schema_nreturns(s), 10);
    const tt_arg *rep = tt_schema_arg(s, 22);
    ck_assert_int_eq(rep->default_value.n, 300);
    ck_assert_int_eq(rep->default_value.u.ints[299], 5);
    char *p = print_schema(s);
    tt_schema *s2 = parse_ok(p);
    assert_schema_eq(s, s2);
    free(p);
    free(text);
    tt_schema_free(s);
    tt_schema_free(s2);
}
END_TEST

/* ---------------------------------------------------------- invalid */

static const struct {
    const char *text, *needle;
} invalid[] = {
    {"mylib::f(int64_t x) -> Tensor", "column 10: unknown type 'int64_t'; use 'int' instead"},
    {"mylib::f(double x) -> Tensor", "column 10: unknown type 'double'; use 'float' instead"},
    {"crop(Tensor x) -> Tensor", "column 1: expected a namespace, like 'mylib::crop'"},
    {"mylib::f.default(Tensor x) -> Tensor", "column 10: 'default' is not a legal overload name"},
    {"mylib::f.__add__(Tensor x) -> Tensor", "column 10: '__add__' is not a legal overload name"},
    {"mylib::f(Tensr x) -> Tensor",
     "column 10: unknown type 'Tensr'; known types are Tensor, int, SymInt, float, bool, str, "
     "Scalar, ScalarType, Device, Layout, MemoryFormat"},
    {"mylib::f(Generator g) -> Tensor", "column 10: type 'Generator' is not supported"},
    {"mylib::f(Tensor x -> Tensor", "column 19: expected ',' or ')' but found '->'"},
    {"mylib::f(Tensor x", "column 18: expected ',' or ')' but found the end of the schema"},
    {"mylib::f(Tensor x)", "column 19: expected '->' after the argument list but found the end"},
    {"mylib::f(Tensor x) Tensor", "column 20: expected '->' after the argument list but found 'Tensor'"},
    {"mylib::f(Tensor x) -> (Tensor", "column 30: expected ',' or ')' in the returns"},
    {"mylib::f(Tensor x) -> Tensor)", "column 29: unexpected ')' after the end of the schema"},
    {"mylib::f(Tensor x) -> Tensor y z", "column 32: unexpected 'z' after the end of the schema"},
    {"mylib::f(Tensor x=1) -> Tensor",
     "column 19: a 'Tensor' argument can only default to None, and only when it is optional"},
    {"mylib::f(Tensor? x=0) -> Tensor", "column 20: a 'Tensor?' argument can only default to None"},
    {"mylib::f(int x=\"s\") -> Tensor", "column 16: expected an integer as the default of 'int'"},
    {"mylib::f(int x=1.5) -> Tensor", "column 16: expected an integer as the default of 'int' but found '1.5'"},
    {"mylib::f(int[2] x=[1, 2, 3]) -> Tensor", "column 19: the default of 'int[2]' has 3 values, expected 2"},
    {"mylib::f(int[] x=1) -> Tensor", "column 18: expected a list like [1, 2] as the default of 'int[]'"},
    {"mylib::f(bool b=2) -> Tensor", "column 17: expected True or False as the default of 'bool' but found '2'"},
    {"mylib::f(int x=None) -> Tensor", "column 16: None is not a valid default for 'int', which is not optional"},
    {"mylib::f(Tensor x, Tensor x) -> Tensor", "column 27: duplicate argument name 'x'"},
    {"mylib::f(Tensor x) -> (Tensor a, Tensor a)", "column 41: duplicate return name 'a'"},
    {"mylib::f(int a=1, int b) -> Tensor",
     "column 23: non-default argument 'b' follows an argument with a default"},
    {"mylib::f(Tensor) -> Tensor", "column 16: expected an argument name but found ')'"},
    {"mylib::f(Tensor x,) -> Tensor", "column 19: expected a type but found ')'"},
    {"mylib::(Tensor x) -> Tensor", "column 8: expected an operator name after '::' but found '('"},
    {"", "column 1: expected an operator name like 'mylib::name' but found the end of the schema"},
    {"mylib:f(Tensor x) -> Tensor", "column 6: expected '::' but found ':'"},
    {"mylib::f.(Tensor x) -> Tensor", "column 10: expected an overload name after '.' but found '('"},
    {"mylib::f(*, Tensor x, *, Tensor y) -> ()", "column 23: '*' appears twice"},
    {"mylib::f(Tensor x, *) -> ()", "column 20: '*' must be followed by a keyword-only argument"},
    {"mylib::f(int(a) x) -> ()", "column 13: alias annotations are only allowed on Tensor, not on 'int'"},
    {"mylib::f(Tensor(a|b) x) -> ()", "column 18: alias annotations with several sets"},
    {"mylib::f(Tensor(a -> b) x) -> ()", "column 22: expected '*' after '->'"},
    {"mylib::f(Tensor(a x) -> ()", "column 19: expected ')' to close the alias annotation"},
    {"mylib::f(float x=inf) -> ()", "column 18: expected a number as the default of 'float' but found 'inf'"},
    {"mylib::f(str s='abc) -> ()", "column 16: expected a string like \"mean\" as the default of 'str' "
                                   "but found an unterminated string"},
    {"mylib::f(str s='a\\q') -> ()", "column 18: unknown escape sequence '\\q'"},
    {"mylib::f(ScalarType t=complex64) -> ()", "column 23: expected a dtype as the default of 'ScalarType'"},
    {"mylib::f(Device d=\"tpu\") -> ()", "column 19: unknown device 'tpu'; known devices are cpu, cuda, meta"},
    {"mylib::f(int[0] x) -> ()", "column 14: the size of a list must be an integer from 1 to"},
    {"mylib::f(int[2 x) -> ()", "column 16: expected ']' but found 'x'"},
    {"mylib::f(str[] x) -> ()", "column 13: lists of str are not supported"},
    {"mylib::f(int[][] x) -> ()", "column 15: lists of lists are not supported"},
    {"mylib::f(int?[] x) -> ()", "column 13: only Tensor lists may have optional elements"},
    {"mylib::f(Tensor[2] x) -> ()", "column 16: a sized list like Tensor[2] is only supported for int"},
    {"mylib::f(int? ? x) -> ()", "column 15: '?' twice"},
    {"mylib::f(int x=99999999999999999999) -> ()", "column 16: the integer 99999999999999999999 is out of range"},
    {"mylib::f(float x=1e999) -> ()", "column 18: the number 1e999 is out of range for a float"},
    {"mylib::f(Tensor in) -> ()", "column 17: 'in' is a reserved word and cannot be an argument name"},
    {"mylib::f(int x=-) -> ()", "column 17: expected a number after '-' but found ')'"},
    {"mylib::f(Tensor x) -> Tensor=None", "column 29: a return cannot have a default"},
    {"mylib::f(Tensor x) -> Tensor $", "column 30: unexpected '$' after the end of the schema"},
    {"mylib::f(int[2] x=[1, 2) -> ()", "column 24: expected ',' or ']' in the list but found ')'"},
    {"mylib::f(int[2] x=[1]) -> ()", "column 19: the default of 'int[2]' has 1 value, expected 2 (or []"},
    {"mylib::f(ScalarType t=9) -> ()", "column 23: the ScalarType code '9' (the default of "
                                       "'ScalarType') names no dtype tensortrace has"},
    {"mylib::f(Layout l=1) -> ()", "column 19: expected 0 (torch.strided, the only layout) as "
                                   "the default of 'Layout' but found '1'"},
    {"mylib::f(MemoryFormat m=4) -> ()", "column 25: expected a memory format code from 0 to 3"},
    {"mylib::f(Layout[] l) -> ()", "column 16: lists of Layout are not supported"},
};

START_TEST(test_invalid)
{
    tt_clear_error();
    tt_schema *s = tt_schema_parse(invalid[_i].text);
    ck_assert_msg(s == NULL, "'%s' parsed", invalid[_i].text);
    ck_assert_error(TT_ESCHEMA, invalid[_i].needle);
    /* The message quotes the schema. */
    char head[512];
    snprintf(head, sizeof head, "schema '%s': column ", invalid[_i].text);
    ck_assert_error(TT_ESCHEMA, head);
}
END_TEST

START_TEST(test_null_text)
{
    ck_assert_ptr_null(tt_schema_parse(NULL));
    ck_assert_error(TT_EINVAL, "tt_schema_parse: argument 'text'");
    /* NULL-safe accessors */
    tt_schema_free(NULL);
    ck_assert_int_eq(tt_schema_nargs(NULL), 0);
    ck_assert_ptr_null(tt_schema_arg(NULL, 0));
    ck_assert(!tt_schema_is_mutable(NULL));
}
END_TEST

/* Every prefix of every valid schema either parses or fails with
 * TT_ESCHEMA and a column; nothing crashes (the ASan build checks reads). */
START_TEST(test_prefixes)
{
    const char *text = valid[_i].text;
    size_t n = strlen(text);
    char *buf = malloc(n + 1);
    ck_assert_ptr_nonnull(buf);
    for (size_t k = 0; k <= n; k++) {
        memcpy(buf, text, k);
        buf[k] = '\0';
        tt_clear_error();
        tt_schema *s = tt_schema_parse(buf);
        if (s) {
            tt_schema_free(s);
        } else {
            ck_assert_error(TT_ESCHEMA, ": column ");
        }
    }
    free(buf);
}
END_TEST

/* ---------------------------------------------------- out of memory */

static void oom_every_allocation(const char *text)
{
    int64_t before = tt_debug_alloc_count();
    tt_schema *s = parse_ok(text);
    int64_t count = tt_debug_alloc_count() - before;
    tt_schema_free(s);
    ck_assert_int_gt(count, 0);
    for (int64_t k = 1; k <= count; k++) {
        tt_clear_error();
        tt_debug_fail_alloc(k);
        s = tt_schema_parse(text);
        tt_debug_fail_alloc(0);
        ck_assert_msg(s == NULL, "'%s' parsed with allocation %lld failing", text, (long long)k);
        ck_assert_error(TT_ENOMEM, "out of memory");
    }
    /* One allocation further, it succeeds again. */
    tt_debug_fail_alloc(count + 1);
    s = tt_schema_parse(text);
    tt_debug_fail_alloc(0);
    ck_assert_ptr_nonnull(s);
    tt_schema_free(s);
}

START_TEST(test_oom)
{
    oom_every_allocation("mylib::crop(Tensor pic, int[4] box) -> Tensor");
    oom_every_allocation("mylib::conv(Tensor input, Tensor? bias=None, int[2] stride=1, "
                         "*, str reduce='mean', float[] w=[1, 2]) -> (Tensor a, Tensor b)");
    char *text = big_schema();
    oom_every_allocation(text);
    free(text);
}
END_TEST

/* ------------------------------------------------------------ types */

START_TEST(test_type_str)
{
    static const struct {
        tt_type t;
        const char *want;
    } cases[] = {
        {{TT_T_TENSOR, false, false, false, 0}, "Tensor"},
        {{TT_T_TENSOR, true, false, false, 0}, "Tensor?"},
        {{TT_T_TENSOR, false, true, false, 0}, "Tensor[]"},
        {{TT_T_TENSOR, false, true, true, 0}, "Tensor?[]"},
        {{TT_T_TENSOR, true, true, false, 0}, "Tensor[]?"},
        {{TT_T_INT, false, true, false, 4}, "int[4]"},
        {{TT_T_INT, true, true, false, 0}, "int[]?"},
        {{TT_T_INT, true, true, false, 2}, "int[2]?"},
        {{TT_T_SYMINT, false, true, false, 0}, "SymInt[]"},
        {{TT_T_SYMINT, false, false, false, 0}, "SymInt"},
        {{TT_T_FLOAT, false, false, false, 0}, "float"},
        {{TT_T_FLOAT, false, true, false, 0}, "float[]"},
        {{TT_T_BOOL, false, true, false, 3}, "bool[3]"},
        {{TT_T_STR, false, false, false, 0}, "str"},
        {{TT_T_SCALAR, true, false, false, 0}, "Scalar?"},
        {{TT_T_SCALARTYPE, true, false, false, 0}, "ScalarType?"},
        {{TT_T_DEVICE, false, false, false, 0}, "Device"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_str_eq(tt_type_str(&cases[i].t, buf, sizeof buf), cases[i].want);
    char small[4];
    ck_assert_str_eq(tt_type_str(&cases[3].t, small, sizeof small), "Ten");
    /* The parser agrees with the printer. */
    tt_schema *s = parse_ok("m::f(Tensor?[] a, int[]? b, int[4] c, SymInt[] d, Tensor[]? e) -> ()");
    const char *want[] = {"Tensor?[]", "int[]?", "int[4]", "SymInt[]", "Tensor[]?"};
    for (int i = 0; i < 5; i++)
        ck_assert_str_eq(tt_type_str(&tt_schema_arg(s, i)->type, buf, sizeof buf), want[i]);
    tt_schema_free(s);
}
END_TEST

/* ----------------------------------------------------------- values */

START_TEST(test_devices)
{
    ck_assert_str_eq(tt_device_name(TT_DEV_CPU), "cpu");
    ck_assert_str_eq(tt_device_name(TT_DEV_CUDA), "cuda");
    ck_assert_str_eq(tt_device_name(TT_DEV_META), "meta");
    ck_assert_str_eq(tt_device_name(TT_DEVICE_COUNT), "?");
    ck_assert_int_eq(tt_device_from_name("cpu"), TT_DEV_CPU);
    ck_assert_int_eq(tt_device_from_name("cuda"), TT_DEV_CUDA);
    ck_assert_int_eq(tt_device_from_name("meta"), TT_DEV_META);
    ck_assert_int_eq(tt_device_from_name("tpu"), -1);
    ck_assert_int_eq(tt_device_from_name("CPU"), -1);
    ck_assert_int_eq(tt_device_from_name(NULL), -1);
}
END_TEST

START_TEST(test_value_describe)
{
    char buf[128];
    tt_tensor *t = tt_zeros(TT_SHAPE(2, 3), TT_F32);
    tt_value v = tt_v_tensor(t);
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "Tensor f32[2, 3]");
    tt_tensor *f = tt_fake_empty(1, (const tt_size[]){4}, TT_I64);
    v = tt_v_tensor(f);
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "Tensor fake i64[4]");
    v = tt_v_tensor(NULL);
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "None");
    v = tt_v_none();
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "None");
    v = tt_v_int(3);
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "int 3");
    v = tt_v_int(-12);
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "int -12");
    v = tt_v_float(0.5);
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "float 0.5");
    v = tt_v_float(2.0);
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "float 2.0");
    v = tt_v_bool(true);
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "bool true");
    v = tt_v_bool(false);
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "bool false");
    v = tt_v_str("x");
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "str \"x\"");
    v = tt_v_str("a \"quoted\"\n");
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "str \"a \\\"quoted\\\"\\012\"");
    v = tt_v_str("0123456789012345678901234567890123456789");
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf),
                     "str \"01234567890123456789012345678901\"...");
    v = tt_v_ints(TT_INTS(1, 2, 3));
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "int[3]");
    v = tt_v_floats(2, (const double[]){1, 2});
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "float[2]");
    v = tt_v_bools(1, (const bool[]){true});
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "bool[1]");
    tt_tensor *ts[2] = {t, f};
    v = tt_v_tensors(2, ts);
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "Tensor[2]");
    v = tt_v_dtype(TT_F32);
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "dtype f32");
    v = tt_v_device(TT_DEV_CPU);
    ck_assert_str_eq(tt_value_describe(&v, buf, sizeof buf), "device cpu");
    ck_assert_str_eq(tt_value_describe(NULL, buf, sizeof buf), "NULL");
    char small[6];
    v = tt_v_int(123456);
    ck_assert_str_eq(tt_value_describe(&v, small, sizeof small), "int 1");
    tt_release(t);
    tt_release(f);
}
END_TEST

/* A namespace of any length prints in full and re-parses (the printer cut
 * it at 63 bytes); a qualified name over TT_MAX_OP_NAME is refused when it
 * parses, so the registry never truncates one (two long names collided). */
START_TEST(test_long_names)
{
    char ns[80], text[1200], back[1200];
    memset(ns, 'n', sizeof ns - 1);
    ns[sizeof ns - 1] = '\0';
    snprintf(text, sizeof text, "%s::f(Tensor x) -> Tensor", ns);
    tt_schema *s = tt_schema_parse(text);
    ck_assert_msg(s != NULL, "%s", tt_errmsg());
    tt_schema_print(s, back, sizeof back);
    ck_assert_str_eq(back, text);
    tt_schema_free(s);

    /* 255 characters in all is the limit */
    char name[600];
    int len = TT_MAX_OP_NAME - (int)strlen("ab::");
    memset(name, 'x', (size_t)len);
    name[len] = '\0';
    snprintf(text, sizeof text, "ab::%s() -> ()", name);
    s = tt_schema_parse(text);
    ck_assert_msg(s != NULL, "%s", tt_errmsg());
    tt_schema_free(s);
    snprintf(text, sizeof text, "ab::%sx() -> ()", name);
    ck_assert_ptr_null(tt_schema_parse(text));
    ck_assert_error(TT_ESCHEMA, "is 256 characters long; at most 255 are supported");
    snprintf(text, sizeof text, "ab::%.200s.%.60s() -> ()", name, name);
    ck_assert_ptr_null(tt_schema_parse(text));
    ck_assert_error(TT_ESCHEMA, "column 1: the op name 'ab::xxxxxxxxxxxxxxxxxxxx...' is 265");
    tt_library *lib = tt_library_new(TT_LIB_FRAGMENT, "ab");
    ck_assert_ptr_null(tt_custom_op_define(lib, &(tt_custom_op_spec){.schema = text}));
    ck_assert_error(TT_ESCHEMA, "at most 255 are supported");
    tt_library_free(lib);
}
END_TEST

START_TEST(test_value_clear)
{
    tt_value v = tt_v_tensor(tt_zeros(TT_SHAPE(2), TT_F32));
    ck_assert_int_eq(tt_live_tensors(), 1);
    tt_value_clear(&v);
    ck_assert_int_eq(v.kind, TT_V_NONE);
    ck_assert_int_eq(tt_live_tensors(), 0);

    /* A tensor-list result (an array the dispatcher allocated): entries
     * may be NULL (Tensor?[]). */
    tt_library *lib = tt_library_new(TT_LIB_DEF, "clearv");
    ck_assert_ptr_nonnull(lib);
    tt_op *op = tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "clearv::three() -> Tensor?[]", .kernel = three_kernel});
    ck_assert_ptr_nonnull(op);
    ck_assert_int_eq(tt_op_call(op, NULL, 0, &v, 1), TT_OK);
    tt_library_free(lib);
    ck_assert_int_eq(v.kind, TT_V_TENSORS);
    ck_assert_int_eq(v.n, 3);
    ck_assert_ptr_null(v.u.tensors[1]);
    ck_assert_int_eq(tt_live_tensors(), 2);
    tt_value_clear(&v);
    ck_assert_int_eq(v.kind, TT_V_NONE);
    ck_assert_int_eq(v.n, 0);
    ck_assert_int_eq(tt_live_tensors(), 0);

    /* Plain values are reset; nothing is freed. */
    v = tt_v_ints(TT_INTS(1, 2));
    tt_value_clear(&v);
    ck_assert_int_eq(v.kind, TT_V_NONE);
    v = tt_v_str("kept");
    tt_value_clear(&v);
    ck_assert_int_eq(v.kind, TT_V_NONE);
    tt_value_clear(NULL);
}
END_TEST

/* ------------------------------------------- PyTorch's core ATen opset */

/* The schemas of tests/data/core_aten_ops.txt (a copy of PyTorch's Core
 * ATen opset as PyTorch 1.13 prints it), one per line; lines without
 * "::" name ops 1.13 predates. Returns how many, into a malloc'd array. */
static int read_core_aten(char ***out)
{
    const char *dir = getenv("TT_TEST_SRCDIR");
    ck_assert_msg(dir != NULL, "TT_TEST_SRCDIR is not set (run the suite with meson test)");
    char path[1024];
    snprintf(path, sizeof path, "%s/data/core_aten_ops.txt", dir);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char line[4096];
    int n = 0, cap = 256;
    char **v = malloc(sizeof *v * (size_t)cap);
    ck_assert_ptr_nonnull(v);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '#' || !strstr(line, "::"))
            continue;
        ck_assert_int_lt(n, cap);
        v[n] = strdup(line);
        ck_assert_ptr_nonnull(v[n]);
        n++;
    }
    fclose(f);
    ck_assert_int_ge(n, 180); /* the file is whole */
    *out = v;
    return n;
}

static void free_lines(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Every schema parses and prints back to itself. One spelling differs on
 * purpose: PyTorch's C++ printer writes an integral float default as "2.",
 * torch.library (Python's repr) as "2.0", and we print Python's. */
START_TEST(test_core_aten_round_trip)
{
    char **lines;
    int n = read_core_aten(&lines);
    for (int i = 0; i < n; i++) {
        tt_schema *s = tt_schema_parse(lines[i]);
        ck_assert_msg(s != NULL, "'%s' did not parse: %s", lines[i], tt_errmsg());
        char want[4096];
        size_t k = 0;
        for (const char *c = lines[i]; *c && k < sizeof want - 2; c++) {
            want[k++] = *c;
            if (*c == '.' && c > lines[i] && c[-1] >= '0' && c[-1] <= '9' &&
                (c[1] == ',' || c[1] == ')'))
                want[k++] = '0';
        }
        want[k] = '\0';
        char *p = print_schema(s);
        ck_assert_str_eq(p, want);
        tt_schema *s2 = parse_ok(p);
        assert_schema_eq(s, s2);
        free(p);
        tt_schema_free(s);
        tt_schema_free(s2);
    }
    free_lines(lines, n);
}
END_TEST

/* A kernel that checks what binding handed it and fails with "bound" (so
 * no op needs real outputs): each sized int list holds N values, or any
 * number for int[1], or none where the schema's default is []. */
static tt_status bound_kernel(tt_frame *f)
{
    const tt_schema *s = tt_op_schema(tt_frame_op(f));
    for (int i = 0; i < tt_frame_nargs(f); i++) {
        const tt_arg *a = tt_schema_arg(s, i);
        const tt_value *v = tt_frame_arg(f, i);
        if (a->type.is_list && a->type.list_size > 1 && v->kind == TT_V_INTS &&
            v->n != a->type.list_size && !(v->n == 0 && a->default_value.kind == TT_V_INTS &&
                                           a->default_value.n == 0))
            return tt_frame_fail(f, TT_EINVAL, "'%s' has %d values", a->name, (int)v->n);
    }
    return tt_frame_fail(f, TT_EINVAL, "bound");
}

/* A value of a's type in one of PyTorch's forms: form 1 gives a sized
 * list as one number (repeated), form 2 as a list (two dims for int[1]). */
static tt_value aten_value(const tt_arg *a, int form, tt_tensor *x, tt_tensor *const *xs,
                           tt_tensor *const *xs_opt)
{
    static const int64_t ints[8] = {0, 1, 1, 1, 1, 1, 1, 1};
    static const double floats[2] = {0.5, 2};
    static const bool bools[3] = {true, false, true};
    const tt_type *t = &a->type;
    if (t->is_list) {
        int n = t->list_size > 1 ? t->list_size : 2;
        switch (t->base) {
        case TT_T_TENSOR: return tt_v_tensors(2, t->elem_optional ? xs_opt : xs);
        case TT_T_INT:
        case TT_T_SYMINT: return form == 1 && t->list_size ? tt_v_int(1) : tt_v_ints(n, ints);
        case TT_T_BOOL: return tt_v_bools(t->list_size ? t->list_size : 3, bools);
        default: return tt_v_floats(2, floats);
        }
    }
    switch (t->base) {
    case TT_T_TENSOR: return tt_v_tensor(x);
    case TT_T_INT:
    case TT_T_SYMINT: return tt_v_int(1);
    case TT_T_FLOAT: return tt_v_float(0.5);
    case TT_T_BOOL: return tt_v_bool(true);
    case TT_T_STR: return tt_v_str("sum");
    case TT_T_SCALAR: return tt_v_int(2);
    case TT_T_SCALARTYPE: return tt_v_dtype(TT_F32);
    case TT_T_DEVICE: return tt_v_device(TT_DEV_CPU);
    case TT_T_LAYOUT:
    case TT_T_MEMORY_FORMAT: return tt_v_int(0);
    }
    return tt_v_none();
}

/* Every schema binds PyTorch's argument forms: the required arguments
 * alone (defaults filled in, [] included), every argument with sized
 * lists as single numbers, and every argument with lists. */
START_TEST(test_core_aten_bind)
{
    char **lines;
    int n = read_core_aten(&lines);
    tt_library *lib = tt_library_new(TT_LIB_DEF, "aten");
    ck_assert_ptr_nonnull(lib);
    tt_tensor *x = tt_zeros(TT_SHAPE(2, 3), TT_F32);
    tt_tensor *xs[2] = {x, x}, *xs_opt[2] = {x, NULL};
    for (int i = 0; i < n; i++) {
        tt_op *op = tt_custom_op_define(lib, &(tt_custom_op_spec){.schema = lines[i],
                                                                  .kernel = bound_kernel});
        ck_assert_msg(op != NULL, "'%s' was not defined: %s", lines[i], tt_errmsg());
        const tt_schema *s = tt_op_schema(op);
        int na = tt_schema_nargs(s), nr = tt_schema_nreturns(s);
        for (int form = 0; form < 3; form++) {
            tt_value args[32], outs[8];
            int given = 0;
            for (int k = 0; k < na; k++) {
                const tt_arg *a = tt_schema_arg(s, k);
                if (form == 0 && a->has_default)
                    break; /* the rest (kwarg-only ones too) take defaults */
                args[given++] = aten_value(a, form, x, xs, xs_opt);
            }
            if (form == 0) {
                /* A required keyword-only argument after a default
                 * (var.correction's int? correction) needs a value. */
                for (int k = given; k < na; k++)
                    if (!tt_schema_arg(s, k)->has_default)
                        for (; given <= k; given++)
                            args[given] = tt_schema_arg(s, given)->has_default
                                              ? tt_schema_arg(s, given)->default_value
                                              : aten_value(tt_schema_arg(s, given), 0, x, xs,
                                                           xs_opt);
            }
            tt_clear_error();
            tt_status st = tt_op_call(op, args, given, outs, nr);
            ck_assert_msg(st == TT_EINVAL && strstr(tt_errmsg(), ": bound"),
                          "'%s' (form %d): %s", lines[i], form, tt_errmsg());
        }
    }
    tt_release(x);
    tt_library_free(lib);
    free_lines(lines, n);
}
END_TEST

/* The binding of sized lists in detail, on the schemas the issue names. */
static tt_status echo_lists_kernel(tt_frame *f)
{
    char msg[256] = "";
    size_t len = 0;
    for (int i = 0; i < tt_frame_nargs(f); i++) {
        const tt_value *v = tt_frame_arg(f, i);
        if (v->kind != TT_V_INTS)
            continue;
        len += (size_t)snprintf(msg + len, sizeof msg - len, "%s[", len ? " " : "");
        for (int k = 0; k < v->n; k++)
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%lld", k ? "," : "",
                                    (long long)v->u.ints[k]);
        len += (size_t)snprintf(msg + len, sizeof msg - len, "]");
    }
    return tt_frame_fail(f, TT_EINVAL, "got %s", msg);
}

START_TEST(test_sized_list_binding)
{
    tt_library *lib = tt_library_new(TT_LIB_DEF, "sl");
    ck_assert_ptr_nonnull(lib);
    tt_op *pool = tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "sl::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] "
                  "stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> "
                  "(Tensor, Tensor)",
        .kernel = echo_lists_kernel});
    tt_op *var = tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "sl::var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool "
                  "keepdim=False) -> Tensor",
        .kernel = echo_lists_kernel});
    tt_op *roll = tt_custom_op_define(lib, &(tt_custom_op_spec){
        .schema = "sl::roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor",
        .kernel = echo_lists_kernel});
    ck_assert_ptr_nonnull(pool);
    ck_assert_ptr_nonnull(var);
    ck_assert_ptr_nonnull(roll);
    tt_tensor *x = tt_zeros(TT_SHAPE(2, 3), TT_F32);
    tt_value outs[2];
    /* max_pool2d(x, 2): a single int is repeated; stride stays []. */
    ck_assert_int_eq(tt_op_call(pool, (tt_value[]){tt_v_tensor(x), tt_v_int(2)}, 2, outs, 2),
                     TT_EINVAL);
    ck_assert_error(TT_EINVAL, "sl::max_pool2d_with_indices: got [2,2] [] [0,0] [1,1]");
    ck_assert_int_eq(tt_op_call(pool, (tt_value[]){tt_v_tensor(x), tt_v_ints(TT_INTS(3, 2)),
                                                   tt_v_ints(0, NULL), tt_v_int(1)},
                                4, outs, 2),
                     TT_EINVAL);
    ck_assert_error(TT_EINVAL, "sl::max_pool2d_with_indices: got [3,2] [] [1,1] [1,1]");
    /* A list of another length for int[2] is refused (stricter than
     * PyTorch, which leaves that to the kernel). */
    ck_assert_int_eq(tt_op_call(pool, (tt_value[]){tt_v_tensor(x), tt_v_ints(TT_INTS(3, 2, 1))},
                                2, outs, 2),
                     TT_EINVAL);
    ck_assert_error(TT_EINVAL, "sl::max_pool2d_with_indices: argument 'kernel_size' (#2) "
                               "expects int[2], got int[3]");
    /* [] binds only where the default is []. */
    ck_assert_int_eq(tt_op_call(pool, (tt_value[]){tt_v_tensor(x), tt_v_ints(0, NULL)}, 2, outs,
                                2),
                     TT_EINVAL);
    ck_assert_error(TT_EINVAL, "argument 'kernel_size' (#2) expects int[2], got int[0]");
    /* var over two dims, over one (an int), over all (None). */
    tt_tensor *r = tt_op_call1(var, (tt_value[]){tt_v_tensor(x), tt_v_ints(TT_INTS(0, 1))}, 2);
    ck_assert_ptr_null(r);
    ck_assert_error(TT_EINVAL, "sl::var.dim: got [0,1]");
    ck_assert_ptr_null(tt_op_call1(var, (tt_value[]){tt_v_tensor(x), tt_v_int(1)}, 2));
    ck_assert_error(TT_EINVAL, "sl::var.dim: got [1]");
    ck_assert_ptr_null(tt_op_call1(var, (tt_value[]){tt_v_tensor(x), tt_v_none()}, 2));
    ck_assert_error(TT_EINVAL, "sl::var.dim: got ");
    /* roll with shifts for two dims, and with the [] default. */
    ck_assert_ptr_null(tt_op_call1(roll, (tt_value[]){tt_v_tensor(x), tt_v_ints(TT_INTS(1, 2)),
                                                      tt_v_ints(TT_INTS(0, 1))},
                                   3));
    ck_assert_error(TT_EINVAL, "sl::roll: got [1,2] [0,1]");
    ck_assert_ptr_null(tt_op_call1(roll, (tt_value[]){tt_v_tensor(x), tt_v_int(3)}, 2));
    ck_assert_error(TT_EINVAL, "sl::roll: got [3] []");
    tt_release(x);
    tt_library_free(lib);
}
END_TEST

static Suite *schema_suite(void)
{
    Suite *s = suite_create("schema");
    TCase *tc = tt_tcase("valid");
    tcase_add_loop_test(tc, test_valid_round_trip, 0, (int)(sizeof valid / sizeof valid[0]));
    tcase_add_test(tc, test_structure_names_and_kwargs);
    tcase_add_test(tc, test_structure_alias);
    tcase_add_test(tc, test_structure_defaults);
    tcase_add_test(tc, test_mark_write);
    tcase_add_test(tc, test_big_schema);
    suite_add_tcase(s, tc);

    tc = tt_tcase("invalid");
    tcase_add_loop_test(tc, test_invalid, 0, (int)(sizeof invalid / sizeof invalid[0]));
    tcase_add_test(tc, test_null_text);
    tcase_add_loop_test(tc, test_prefixes, 0, (int)(sizeof valid / sizeof valid[0]));
    suite_add_tcase(s, tc);

    tc = tt_tcase("oom");
    tcase_add_test(tc, test_oom);
    suite_add_tcase(s, tc);

    tc = tt_tcase("types");
    tcase_add_test(tc, test_type_str);
    suite_add_tcase(s, tc);

    tc = tt_tcase("values");
    tcase_add_test(tc, test_devices);
    tcase_add_test(tc, test_value_describe);
    tcase_add_test(tc, test_value_clear);
    tcase_add_test(tc, test_long_names);
    suite_add_tcase(s, tc);

    tc = tt_tcase("core_aten");
    tcase_add_test(tc, test_core_aten_round_trip);
    tcase_add_test(tc, test_core_aten_bind);
    tcase_add_test(tc, test_sized_list_binding);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(schema_suite)
