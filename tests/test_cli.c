/* `tt`, the command-line tool: the input-spec parser (every valid form and
 * every error with its message), the tensors made from specs, the command
 * line (options, defaults, every usage error), the help texts against the
 * option table, opcheck arguments from specs (tools/tt_cli.c, called
 * directly), and end-to-end runs of the built binary on the example model
 * library (tools/example_model.c): trace, pictures, explain, fullgraph
 * breaks, profile (eager and compiled: the table, the Chrome trace, the
 * SVG timeline, the JSON events), diff (compiled against eager, the
 * report of a difference, hash logs), opcheck passing and failing, ops,
 * and the exit status and the one-line message of each usage error.
 *
 * meson passes the binary and the library as TT_BIN and TT_EXAMPLE_LIB,
 * and the source folder as TT_TEST_SRCDIR (to find the line of the graph
 * break in tools/tutorial_ops.c). */
#include "tt_test.h"

#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tt_cli.h"

extern char **environ;

/* ============================================================ input specs */

static const struct {
    const char *text;
    tt_dtype dtype;
    int ndim;
    int64_t sizes[8];
    int64_t numel;
    bool requires_grad, has_values;
} good_specs[] = {
    {"f32[3,64,64]", TT_F32, 3, {3, 64, 64}, 3 * 64 * 64, false, false},
    {"f64[2,3]:requires_grad", TT_F64, 2, {2, 3}, 6, true, false},
    {"i64[4]=0,0,10,10", TT_I64, 1, {4}, 4, false, true},
    {"f32[]", TT_F32, 0, {0}, 1, false, false},
    {"f64[]=0.5", TT_F64, 0, {0}, 1, false, true},
    {"f32[0,3]", TT_F32, 2, {0, 3}, 0, false, false},
    {"f32[0]=", TT_F32, 1, {0}, 0, false, true},
    {"i32[2]=-5,2147483647", TT_I32, 1, {2}, 2, false, true},
    {"u8[2]=0,255", TT_U8, 1, {2}, 2, false, true},
    {"bool[3]=1,false,true", TT_BOOL, 1, {3}, 3, false, true},
    {"f32[2]=1e-3,-inf", TT_F32, 1, {2}, 2, false, true},
    {"f64[2]:requires_grad=1,2", TT_F64, 1, {2}, 2, true, true},
    {"f64[2]=1,2:requires_grad", TT_F64, 1, {2}, 2, true, true},
    {"f32[ 3 , 4 ]", TT_F32, 2, {3, 4}, 12, false, false},
    {"u8[1,1,1,1,1,1,1,2]", TT_U8, 8, {1, 1, 1, 1, 1, 1, 1, 2}, 2, false, false},
    /* Fake inputs need no memory: a size as large as an int64 numel allows. */
    {"f32[1048576,1048576,1024]", TT_F32, 3, {1048576, 1048576, 1024}, (int64_t)1 << 50, false,
     false},
    /* Plain numbers: a 0-dim tensor holding them, integers as i64. */
    {"0.5", TT_F64, 0, {0}, 1, false, true},
    {"-2", TT_I64, 0, {0}, 1, false, true},
    {"+7", TT_I64, 0, {0}, 1, false, true},
    {"1e3", TT_F64, 0, {0}, 1, false, true},
    {".25", TT_F64, 0, {0}, 1, false, true},
};

START_TEST(test_spec_valid)
{
    tt_cli_spec s;
    char err[256] = "";
    for (size_t k = 0; k < sizeof good_specs / sizeof good_specs[0]; k++) {
        const char *text = good_specs[k].text;
        ck_assert_msg(tt_cli_spec_parse(text, &s, err, sizeof err) == 0, "%s: %s", text, err);
        ck_assert_str_eq(s.text, text);
        ck_assert_int_eq(s.dtype, good_specs[k].dtype);
        ck_assert_int_eq(s.ndim, good_specs[k].ndim);
        for (int d = 0; d < s.ndim; d++)
            ck_assert_int_eq(s.sizes[d], good_specs[k].sizes[d]);
        ck_assert_int_eq(s.numel, good_specs[k].numel);
        ck_assert_msg(s.requires_grad == good_specs[k].requires_grad, "%s", text);
        ck_assert_msg(s.has_values == good_specs[k].has_values, "%s", text);
        ck_assert_msg(s.has_values == (s.values != NULL), "%s", text);
        tt_cli_spec_clear(&s);
        ck_assert_ptr_null(s.values);
    }
}
END_TEST

/* The values land in the dtype's representation, in order. */
START_TEST(test_spec_values)
{
    tt_cli_spec s;
    char err[256];
    ck_assert_int_eq(tt_cli_spec_parse("i64[4]=0,-7,10,9223372036854775807", &s, err,
                                       sizeof err), 0);
    const int64_t *i = s.values;
    ck_assert(i[0] == 0 && i[1] == -7 && i[2] == 10 && i[3] == INT64_MAX);
    tt_cli_spec_clear(&s);
    ck_assert_int_eq(tt_cli_spec_parse("f32[2,2]=0.5,-1,1e3,nan", &s, err, sizeof err), 0);
    const float *f = s.values;
    ck_assert(f[0] == 0.5f && f[1] == -1.0f && f[2] == 1000.0f && isnan(f[3]));
    tt_cli_spec_clear(&s);
    ck_assert_int_eq(tt_cli_spec_parse("bool[4]=1,0,true,false", &s, err, sizeof err), 0);
    const bool *b = s.values;
    ck_assert(b[0] && !b[1] && b[2] && !b[3]);
    tt_cli_spec_clear(&s);
    ck_assert_int_eq(tt_cli_spec_parse("u8[2]=255,3", &s, err, sizeof err), 0);
    ck_assert(((uint8_t *)s.values)[0] == 255 && ((uint8_t *)s.values)[1] == 3);
    tt_cli_spec_clear(&s);
    ck_assert_int_eq(tt_cli_spec_parse("i32[1]=-2147483648", &s, err, sizeof err), 0);
    ck_assert(((int32_t *)s.values)[0] == INT32_MIN);
    tt_cli_spec_clear(&s);
    ck_assert_int_eq(tt_cli_spec_parse("-0.125", &s, err, sizeof err), 0);
    ck_assert(*(double *)s.values == -0.125);
    tt_cli_spec_clear(&s);
    ck_assert_int_eq(tt_cli_spec_parse("-12", &s, err, sizeof err), 0);
    ck_assert(*(int64_t *)s.values == -12);
    tt_cli_spec_clear(&s);
}
END_TEST

static const struct {
    const char *text, *message; /* the whole message after "bad --input 'TEXT': " */
} bad_specs[] = {
    {"f32[3,x]", "'x' is not a size"},
    {"", "the spec is empty (write e.g. f32[2,3])"},
    {"f16[3]", "'f16' is not a dtype (f32, f64, i64, i32, u8, bool)"},
    {"float32[3]", "'float32' is not a dtype (f32, f64, i64, i32, u8, bool)"},
    {"[3]", "the dtype is missing (f32, f64, i64, i32, u8, bool)"},
    {"f32", "the sizes are missing: write f32[SIZES] (f32[] is 0-dim)"},
    {"f32=1", "the sizes are missing: write f32[SIZES] (f32[] is 0-dim)"},
    {"f32[3", "']' is missing"},
    {"f32[[3]]", "'[' inside the sizes"},
    {"f32[3,]", "a size is missing in '[3,]'"},
    {"f32[,3]", "a size is missing in '[,3]'"},
    {"f32[-1]", "'-1' is not a size"},
    {"f32[+1]", "'+1' is not a size"},
    {"f32[2.5]", "'2.5' is not a size"},
    {"f32[3 4]", "'3 4' is not a size"},
    {"f32[1,2,3,4,5,6,7,8,9]", "more than 8 sizes (a tensor has at most 8 dims)"},
    {"f32[99999999999999999999]", "size 99999999999999999999 is too large"},
    {"f32[1048576,1048576,1048576,1048576]", "the sizes make 2^60 elements or more"},
    {"f64[1073741824,1073741824]", "the sizes make 2^60 elements or more"},
    {"f64[1152921504606846976]", "size 1152921504606846976 is too large"},
    {"f32[2]x", "unexpected 'x' after ']' (expected :requires_grad or =VALUES)"},
    {"f32[2] ", "unexpected ' ' after ']' (expected :requires_grad or =VALUES)"},
    {"f32[2]:grad", "'grad' is not a flag (the one flag is requires_grad)"},
    {"f32[2]:", "'' is not a flag (the one flag is requires_grad)"},
    {"i64[2]:requires_grad", "requires_grad needs a floating-point dtype, not i64"},
    {"bool[2]:requires_grad", "requires_grad needs a floating-point dtype, not bool"},
    {"f32[2]:requires_grad:requires_grad", "requires_grad is given twice"},
    {"i64[4]=0,0,10", "3 values for 4 elements"},
    {"f32[1]=1,2", "2 values for 1 element"},
    {"f32[2]=", "0 values for 2 elements"},
    {"f32[]=1,2", "a 0-dim tensor takes 1 value, got 2"},
    {"f32[]=", "a 0-dim tensor takes 1 value, got 0"},
    {"f32[2]=1,abc", "'abc' is not a number"},
    {"f32[3]=1,,2", "value 2 is empty"},
    {"f32[1]=1=2", "'1=2' is not a number"},
    {"f32[1]=1:requires_grad=2", "values are given twice"},
    {"i64[1]=1.5", "'1.5' is not an integer"},
    {"i64[1]=0x10", "'0x10' is not an integer"},
    {"u8[1]=256", "'256' is out of range for u8"},
    {"u8[1]=-1", "'-1' is out of range for u8"},
    {"i32[1]=2147483648", "'2147483648' is out of range for i32"},
    {"i64[1]=99999999999999999999", "'99999999999999999999' is out of range for i64"},
    {"bool[1]=2", "'2' is not a bool (0, 1, true, false)"},
    /* Not quite a plain number: read as a spec. */
    {"1.5x", "'1.5x' is not a dtype (f32, f64, i64, i32, u8, bool)"},
    {"-", "'-' is not a dtype (f32, f64, i64, i32, u8, bool)"},
};

START_TEST(test_spec_errors)
{
    for (size_t k = 0; k < sizeof bad_specs / sizeof bad_specs[0]; k++) {
        tt_cli_spec s;
        char err[512], want[512];
        memset(&s, 0x5a, sizeof s); /* whatever it held is cleared */
        ck_assert_msg(tt_cli_spec_parse(bad_specs[k].text, &s, err, sizeof err) == -1, "%s",
                      bad_specs[k].text);
        snprintf(want, sizeof want, "bad --input '%s': %s", bad_specs[k].text,
                 bad_specs[k].message);
        ck_assert_str_eq(err, want);
        ck_assert_ptr_null(s.values);
        ck_assert(!s.has_values);
        ck_assert_msg(!strchr(err, '\n'), "one line: %s", err);
    }
    /* A short buffer is truncated, not overrun. */
    char small[12];
    tt_cli_spec s;
    ck_assert_int_eq(tt_cli_spec_parse("f32[3,x]", &s, small, sizeof small), -1);
    ck_assert_str_eq(small, "bad --input");
}
END_TEST

/* ======================================================= tensors of specs */

static tt_tensor *spec_tensor(const char *text, bool fake)
{
    tt_cli_spec s;
    char err[256];
    ck_assert_msg(tt_cli_spec_parse(text, &s, err, sizeof err) == 0, "%s", err);
    tt_tensor *t = tt_cli_spec_tensor(&s, fake);
    ck_assert_msg(t != NULL, "%s: %s", text, tt_errmsg());
    ck_assert_int_eq(tt_dtype_of(t), s.dtype);
    ck_assert_int_eq(tt_ndim(t), s.ndim);
    for (int d = 0; d < s.ndim; d++)
        ck_assert_int_eq(tt_dim_size(t, d), s.sizes[d]);
    ck_assert(tt_is_contiguous(t));
    ck_assert(tt_requires_grad(t) == s.requires_grad);
    tt_cli_spec_clear(&s);
    return t;
}

/* Element i (row-major) of t, as double. */
static double at(const tt_tensor *t, int64_t i)
{
    int64_t n = tt_numel(t);
    ck_assert(i >= 0 && i < n);
    tt_no_grad_begin();
    tt_tensor *d = tt_to_dtype(t, TT_F64);
    tt_no_grad_end();
    ck_assert_ptr_nonnull(d);
    double *v = malloc(sizeof *v * (size_t)n);
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(tt_to_buffer(d, v, sizeof *v * (size_t)n), TT_OK);
    double x = v[i];
    free(v);
    tt_release(d);
    return x;
}

START_TEST(test_spec_tensor_fake)
{
    /* Fake inputs cost no data memory, so a huge one is fine. */
    const char *texts[] = {"f32[3,64,64]", "f64[2,3]:requires_grad", "i64[]", "bool[0,4]",
                           "f32[1048576,1048576,1024]"};
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        tt_tensor *t = spec_tensor(texts[k], true);
        ck_assert_msg(tt_is_fake(t), "%s", texts[k]);
        tt_release(t);
    }
    /* Values make a real tensor even in fake mode: they are data. */
    tt_tensor *t = spec_tensor("i64[4]=0,0,10,10", true);
    ck_assert(!tt_is_fake(t));
    for (int i = 0; i < 4; i++)
        ck_assert(at(t, i) == (i < 2 ? 0 : 10));
    tt_release(t);
}
END_TEST

START_TEST(test_spec_tensor_real)
{
    static const char *const texts[] = {"f32[4,5]", "f64[7]", "i64[3,3]", "i32[9]",
                                        "u8[2,5]", "bool[10]", "f32[]", "f32[0,2]"};
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        tt_manual_seed(7);
        tt_tensor *a = spec_tensor(texts[k], false);
        tt_manual_seed(7);
        tt_tensor *b = spec_tensor(texts[k], false);
        ck_assert(!tt_is_fake(a));
        int64_t n = tt_numel(a);
        bool varied = n < 3;
        for (int64_t i = 0; i < n; i++) {
            double v = at(a, i);
            ck_assert_msg(v == at(b, i), "%s: the same seed gives the same values", texts[k]);
            if (!tt_dtype_is_float(tt_dtype_of(a))) {
                double hi = tt_dtype_of(a) == TT_BOOL ? 1 : 9;
                ck_assert_msg(v >= 0 && v <= hi && v == floor(v), "%s: %g", texts[k], v);
            }
            varied |= i > 0 && v != at(a, 0);
        }
        ck_assert_msg(varied, "%s: random values all equal", texts[k]);
        tt_release(a);
        tt_release(b);
    }
    tt_tensor *g = spec_tensor("f64[2,3]:requires_grad", false);
    ck_assert(tt_is_leaf(g));
    tt_release(g);
    tt_tensor *v = spec_tensor("f32[2,2]=1,2,3,4:requires_grad", false);
    for (int i = 0; i < 4; i++)
        ck_assert(at(v, i) == i + 1);
    tt_release(v);
    v = spec_tensor("bool[]=true", false);
    ck_assert(at(v, 0) == 1);
    tt_release(v);
}
END_TEST

/* ========================================================== command line */

#define ARGV(...) (int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)), (char *[]){__VA_ARGS__}

static void parse_ok(int argc, char **argv, tt_cli_args *a)
{
    char err[512] = "";
    ck_assert_msg(tt_cli_parse(argc, argv, a, err, sizeof err) == 0, "%s", err);
}

START_TEST(test_parse_trace)
{
    tt_cli_args a;
    parse_ok(ARGV("tt", "trace", "--lib", "libm.so", "--fn", "forward", "--input",
                  "f32[256,784]", "--input=f64[3]:requires_grad", "--mode", "symbolic",
                  "--fullgraph", "--nout=2", "--dot", "g.dot", "--svg=g.svg", "--png", "g.png",
                  "--seed", "18446744073709551615", "--init", "setup"),
             &a);
    ck_assert_int_eq(a.cmd, TT_CLI_TRACE);
    ck_assert(!a.help && !a.version);
    ck_assert_str_eq(a.lib, "libm.so");
    ck_assert_str_eq(a.fn, "forward");
    ck_assert_str_eq(a.init, "setup");
    ck_assert_int_eq(a.ninputs, 2);
    ck_assert_str_eq(a.inputs[0].text, "f32[256,784]");
    ck_assert_int_eq(a.inputs[1].dtype, TT_F64);
    ck_assert(a.inputs[1].requires_grad);
    ck_assert_int_eq(a.mode, TT_TRACE_SYMBOLIC);
    ck_assert(a.fullgraph);
    ck_assert_int_eq(a.nout, 2);
    ck_assert_str_eq(a.dot, "g.dot");
    ck_assert_str_eq(a.svg, "g.svg");
    ck_assert_str_eq(a.png, "g.png");
    ck_assert(a.seed == UINT64_MAX);
    tt_cli_args_clear(&a);
    ck_assert_int_eq(a.ninputs, 0);

    /* Defaults. */
    parse_ok(ARGV("tt", "explain", "--lib", "x.so", "--fn", "f"), &a);
    ck_assert_int_eq(a.cmd, TT_CLI_EXPLAIN);
    ck_assert_int_eq(a.mode, TT_TRACE_FAKE);
    ck_assert_int_eq(a.nout, 0); /* the model table's */
    ck_assert(a.seed == 0 && !a.fullgraph && !a.init && !a.dot && !a.svg && !a.png);
    ck_assert_int_eq(a.ninputs, 0);
    tt_cli_args_clear(&a);

    const char *modes[] = {"fake", "symbolic", "real"};
    for (int m = 0; m < 3; m++) {
        parse_ok(ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--mode", (char *)modes[m]),
                 &a);
        ck_assert_int_eq(a.mode, (int)(m == 0   ? TT_TRACE_FAKE
                                       : m == 1 ? TT_TRACE_SYMBOLIC
                                                : TT_TRACE_REAL));
        tt_cli_args_clear(&a);
    }
}
END_TEST

START_TEST(test_parse_opcheck_ops)
{
    tt_cli_args a;
    parse_ok(ARGV("tt", "opcheck", "--op", "mylib::crop", "--input", "f32[3,64,64]", "--input",
                  "i64[4]=0,0,10,10", "--seed", "3", "--check", "schema,faketensor"),
             &a);
    ck_assert_int_eq(a.cmd, TT_CLI_OPCHECK);
    ck_assert_str_eq(a.op, "mylib::crop");
    ck_assert_ptr_null(a.lib);
    ck_assert_int_eq(a.ninputs, 2);
    ck_assert(a.seed == 3);
    ck_assert_uint_eq(a.checks, TT_OPCHECK_SCHEMA | TT_OPCHECK_FAKETENSOR);
    tt_cli_args_clear(&a);

    parse_ok(ARGV("tt", "opcheck", "--op", "x::y"), &a);
    ck_assert_uint_eq(a.checks, TT_OPCHECK_ALL);
    tt_cli_args_clear(&a);
    parse_ok(ARGV("tt", "opcheck", "--op", "x::y", "--check",
                  "aot_dispatch_dynamic,autograd_registration"),
             &a);
    ck_assert_uint_eq(a.checks,
                      TT_OPCHECK_AOT_DISPATCH_DYNAMIC | TT_OPCHECK_AUTOGRAD_REGISTRATION);
    tt_cli_args_clear(&a);
    parse_ok(ARGV("tt", "opcheck", "--op", "x::y", "--check", "all"), &a);
    ck_assert_uint_eq(a.checks, TT_OPCHECK_ALL);
    tt_cli_args_clear(&a);

    parse_ok(ARGV("tt", "ops"), &a);
    ck_assert_int_eq(a.cmd, TT_CLI_OPS);
    ck_assert_ptr_null(a.lib);
    tt_cli_args_clear(&a);
    parse_ok(ARGV("tt", "ops", "--lib", "libx.so", "--init", "go"), &a);
    ck_assert_str_eq(a.lib, "libx.so");
    ck_assert_str_eq(a.init, "go");
    tt_cli_args_clear(&a);

    /* tt list FILE, or tt list --lib FILE. */
    parse_ok(ARGV("tt", "list", "libx.so"), &a);
    ck_assert_int_eq(a.cmd, TT_CLI_LIST);
    ck_assert_str_eq(a.lib, "libx.so");
    tt_cli_args_clear(&a);
    parse_ok(ARGV("tt", "list", "--lib", "liby.so"), &a);
    ck_assert_str_eq(a.lib, "liby.so");
    tt_cli_args_clear(&a);
}
END_TEST

START_TEST(test_parse_profile)
{
    tt_cli_args a;
    parse_ok(ARGV("tt", "profile", "--lib", "libm.so", "--fn", "forward", "--input", "f32[2,3]",
                  "--input=5", "--compile", "--runs", "7", "--warmup=0", "--rows", "0",
                  "--chrome", "p.json", "--svg", "p.svg", "--json", "--seed", "4", "--nout", "2",
                  "--init", "setup"),
             &a);
    ck_assert_int_eq(a.cmd, TT_CLI_PROFILE);
    ck_assert_str_eq(a.lib, "libm.so");
    ck_assert_str_eq(a.fn, "forward");
    ck_assert_str_eq(a.init, "setup");
    ck_assert_int_eq(a.ninputs, 2);
    ck_assert(a.compile && a.json);
    ck_assert_int_eq(a.runs, 7);
    ck_assert_int_eq(a.warmup, 0);
    ck_assert_int_eq(a.rows, 0);
    ck_assert_str_eq(a.chrome, "p.json");
    ck_assert_str_eq(a.svg, "p.svg");
    ck_assert(a.seed == 4);
    ck_assert_int_eq(a.nout, 2);
    tt_cli_args_clear(&a);

    /* Defaults: one warm-up, one profiled run, 30 rows, eager. */
    parse_ok(ARGV("tt", "profile", "--lib", "x.so", "--fn", "f"), &a);
    ck_assert_int_eq(a.cmd, TT_CLI_PROFILE);
    ck_assert(!a.compile && !a.json && !a.chrome && !a.svg);
    ck_assert_int_eq(a.runs, 1);
    ck_assert_int_eq(a.warmup, 1);
    ck_assert_int_eq(a.rows, 30);
    ck_assert_int_eq(a.ninputs, 0);
    tt_cli_args_clear(&a);
    parse_ok(ARGV("tt", "profile", "--lib", "x.so", "--fn", "f", "--runs", "1000000", "--rows",
                  "1000000", "--warmup", "1000000"),
             &a);
    ck_assert(a.runs == 1000000 && a.rows == 1000000 && a.warmup == 1000000);
    tt_cli_args_clear(&a);
    parse_ok(ARGV("tt", "help", "profile"), &a);
    ck_assert(a.help && a.cmd == TT_CLI_PROFILE);
}
END_TEST

START_TEST(test_parse_diff)
{
    tt_cli_args a;
    parse_ok(ARGV("tt", "diff", "--lib", "libm.so", "--fn", "forward", "--input", "f32[2,3]",
                  "--input=5", "--init", "setup", "--seed", "4", "--nout", "2", "--symbolic",
                  "--rtol", "0.5", "--atol=1e-3", "--json"),
             &a);
    ck_assert_int_eq(a.cmd, TT_CLI_DIFF);
    ck_assert_str_eq(a.lib, "libm.so");
    ck_assert_str_eq(a.fn, "forward");
    ck_assert_str_eq(a.init, "setup");
    ck_assert_int_eq(a.ninputs, 2);
    ck_assert(a.seed == 4);
    ck_assert_int_eq(a.nout, 2);
    ck_assert_int_eq(a.mode, TT_TRACE_SYMBOLIC);
    ck_assert_double_eq(a.rtol, 0.5);
    ck_assert_double_eq(a.atol, 1e-3);
    ck_assert(a.json);
    ck_assert_int_eq(a.nlogs, 0);
    tt_cli_args_clear(&a);

    /* Defaults: rtol 1e-5, atol 1e-6, a trace of the inputs' sizes. */
    parse_ok(ARGV("tt", "diff", "--lib", "x.so", "--fn", "f"), &a);
    ck_assert_int_eq(a.mode, TT_TRACE_FAKE);
    ck_assert_double_eq(a.rtol, 1e-5);
    ck_assert_double_eq(a.atol, 1e-6);
    ck_assert(!a.json && a.nout == 0 && a.seed == 0 && a.ninputs == 0 && a.nlogs == 0);
    tt_cli_args_clear(&a);
    /* 0 is a tolerance: exact equality. */
    parse_ok(ARGV("tt", "diff", "--lib", "x.so", "--fn", "f", "--rtol", "0", "--atol", "0"), &a);
    ck_assert(a.rtol == 0 && a.atol == 0);
    tt_cli_args_clear(&a);

    /* Two hash logs, with --json anywhere. */
    parse_ok(ARGV("tt", "diff", "a.log", "b.log"), &a);
    ck_assert_int_eq(a.nlogs, 2);
    ck_assert_str_eq(a.logs[0], "a.log");
    ck_assert_str_eq(a.logs[1], "b.log");
    ck_assert(!a.lib && !a.fn && !a.json);
    tt_cli_args_clear(&a);
    parse_ok(ARGV("tt", "diff", "a.log", "--json", "b.log"), &a);
    ck_assert(a.nlogs == 2 && a.json);
    ck_assert_str_eq(a.logs[1], "b.log");
    tt_cli_args_clear(&a);
    parse_ok(ARGV("tt", "help", "diff"), &a);
    ck_assert(a.help && a.cmd == TT_CLI_DIFF);
    parse_ok(ARGV("tt", "diff", "a.log", "--help"), &a);
    ck_assert(a.help && a.cmd == TT_CLI_DIFF);
}
END_TEST

START_TEST(test_parse_help_version)
{
    tt_cli_args a;
    parse_ok(ARGV("tt", "--help"), &a);
    ck_assert(a.help && a.cmd == TT_CLI_NONE);
    parse_ok(ARGV("tt", "-h"), &a);
    ck_assert(a.help && a.cmd == TT_CLI_NONE);
    parse_ok(ARGV("tt", "help"), &a);
    ck_assert(a.help && a.cmd == TT_CLI_NONE);
    parse_ok(ARGV("tt", "help", "opcheck"), &a);
    ck_assert(a.help && a.cmd == TT_CLI_OPCHECK);
    /* --help wins over the required options it comes before. */
    parse_ok(ARGV("tt", "trace", "--help"), &a);
    ck_assert(a.help && a.cmd == TT_CLI_TRACE);
    parse_ok(ARGV("tt", "explain", "--fn", "f", "-h"), &a);
    ck_assert(a.help && a.cmd == TT_CLI_EXPLAIN);
    tt_cli_args_clear(&a);
    parse_ok(ARGV("tt", "--version"), &a);
    ck_assert(a.version && !a.help);
}
END_TEST

static const struct {
    int argc;
    char **argv;
    const char *message;
} bad_args[] = {
    {ARGV("tt"), "a command is missing (trace, explain, profile, diff, opcheck, ops, list; see "
                 "tt --help)"},
    {ARGV("tt", "frob"), "unknown command 'frob' (trace, explain, profile, diff, opcheck, ops, "
                         "list; see tt --help)"},
    {ARGV("tt", "--frob"), "unknown option '--frob' (see tt --help)"},
    {ARGV("tt", "help", "frob"), "help: unknown command 'frob' (trace, explain, profile, "
                                 "diff, opcheck, ops, list)"},
    {ARGV("tt", "trace"), "trace: --lib FILE is required (see tt trace --help)"},
    {ARGV("tt", "trace", "--lib", "x.so"), "trace: --fn NAME is required (see tt trace --help)"},
    {ARGV("tt", "explain", "--fn", "f"), "explain: --lib FILE is required (see tt explain --help)"},
    {ARGV("tt", "opcheck", "--lib", "x.so"),
     "opcheck: --op NAME is required (see tt opcheck --help)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--frob"),
     "trace: unknown option '--frob' (see tt trace --help)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--frob=1"),
     "trace: unknown option '--frob' (see tt trace --help)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "extra"),
     "trace: unexpected argument 'extra' (options start with --; see tt trace --help)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--"),
     "trace: unexpected argument '--' (options start with --; see tt trace --help)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--op", "a::b"),
     "trace: --op is not an option of tt trace (see tt trace --help)"},
    {ARGV("tt", "explain", "--lib", "x.so", "--fn", "f", "--mode", "real"),
     "explain: --mode is not an option of tt explain (see tt explain --help)"},
    {ARGV("tt", "ops", "--input", "f32[2]"),
     "ops: --input is not an option of tt ops (see tt ops --help)"},
    {ARGV("tt", "opcheck", "--op", "a::b", "--fn", "f"),
     "opcheck: --fn is not an option of tt opcheck (see tt opcheck --help)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn"), "trace: --fn needs a value (--fn NAME)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--lib", "y.so", "--fn", "f"),
     "trace: --lib is given twice"},
    {ARGV("tt", "trace", "--lib", "", "--fn", "f"), "--lib: the value is empty"},
    {ARGV("tt", "trace", "--lib=x.so", "--fn", "f", "--fullgraph=yes"),
     "trace: --fullgraph takes no value"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--mode", "eager"),
     "--mode: 'eager' is not a mode (fake, symbolic, real)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--nout", "0"),
     "--nout: '0' is not a number of outputs (1 to 64)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--nout", "65"),
     "--nout: '65' is not a number of outputs (1 to 64)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--nout", "-1"),
     "--nout: '-1' is not a number of outputs (1 to 64)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--seed", "1.5"),
     "--seed: '1.5' is not a seed (an integer >= 0)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--seed", "18446744073709551616"),
     "--seed: '18446744073709551616' is not a seed (an integer >= 0)"},
    {ARGV("tt", "opcheck", "--op", "a::b", "--check", "schema,fake"),
     "--check: 'fake' is not a check (schema, autograd_registration, faketensor, "
     "aot_dispatch_dynamic, all)"},
    {ARGV("tt", "opcheck", "--op", "a::b", "--check", ""),
     "--check: '' is not a check (schema, autograd_registration, faketensor, "
     "aot_dispatch_dynamic, all)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--input", "f32[3,x]"),
     "bad --input 'f32[3,x]': 'x' is not a size"},
    {ARGV("tt", "opcheck", "--op", "a::b", "--input", "i64[2]=1"),
     "bad --input 'i64[2]=1': 1 value for 2 elements"},
    {ARGV("tt", "--version", "extra"), NULL}, /* fine: --version ignores the rest */
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--save", "out"),
     "trace: --save needs --mode real (a fake trace computes no values)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--print", "--mode", "symbolic"),
     "trace: --print needs --mode real (a symbolic trace computes no values)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--json=1"),
     "trace: --json takes no value"},
    {ARGV("tt", "explain", "--lib", "x.so", "--fn", "f", "--save", "d"),
     "explain: --save is not an option of tt explain (see tt explain --help)"},
    {ARGV("tt", "list", "--json", "--json", "x.so"), "list: --json is given twice"},
    {ARGV("tt", "profile", "--lib", "x.so"), "profile: --fn NAME is required (see tt profile "
                                             "--help)"},
    {ARGV("tt", "profile", "--fn", "f"), "profile: --lib FILE is required (see tt profile "
                                         "--help)"},
    {ARGV("tt", "profile", "--lib", "x.so", "--fn", "f", "--runs", "0"),
     "--runs: '0' is not a number of runs (1 to 1000000)"},
    {ARGV("tt", "profile", "--lib", "x.so", "--fn", "f", "--runs", "1000001"),
     "--runs: '1000001' is not a number of runs (1 to 1000000)"},
    {ARGV("tt", "profile", "--lib", "x.so", "--fn", "f", "--runs=two"),
     "--runs: 'two' is not a number of runs (1 to 1000000)"},
    {ARGV("tt", "profile", "--lib", "x.so", "--fn", "f", "--warmup", "-1"),
     "--warmup: '-1' is not a number of warm-up runs (0 to 1000000)"},
    {ARGV("tt", "profile", "--lib", "x.so", "--fn", "f", "--rows", "1.5"),
     "--rows: '1.5' is not a number of rows (0 to 1000000; 0: all)"},
    {ARGV("tt", "profile", "--lib", "x.so", "--fn", "f", "--runs", "2", "--runs", "3"),
     "profile: --runs is given twice"},
    {ARGV("tt", "profile", "--lib", "x.so", "--fn", "f", "--compile=yes"),
     "profile: --compile takes no value"},
    {ARGV("tt", "profile", "--lib", "x.so", "--fn", "f", "--mode", "real"),
     "profile: --mode is not an option of tt profile (see tt profile --help)"},
    {ARGV("tt", "profile", "--lib", "x.so", "--fn", "f", "--png", "p.png"),
     "profile: --png is not an option of tt profile (see tt profile --help)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--runs", "2"),
     "trace: --runs is not an option of tt trace (see tt trace --help)"},
    {ARGV("tt", "trace", "--lib", "x.so", "--fn", "f", "--chrome", "t.json"),
     "trace: --chrome is not an option of tt trace (see tt trace --help)"},
    {ARGV("tt", "diff"),
     "diff: --lib FILE and --fn NAME, or two hash logs, are required (see tt diff --help)"},
    {ARGV("tt", "diff", "--lib", "x.so"), "diff: --fn NAME is required (see tt diff --help)"},
    {ARGV("tt", "diff", "--fn", "f", "--input", "f32[2]"),
     "diff: --lib FILE is required (see tt diff --help)"},
    {ARGV("tt", "diff", "--lib", "x.so", "--fn", "f", "--rtol", "-1"),
     "--rtol: '-1' is not a tolerance (a number >= 0)"},
    {ARGV("tt", "diff", "--lib", "x.so", "--fn", "f", "--rtol", "abc"),
     "--rtol: 'abc' is not a tolerance (a number >= 0)"},
    {ARGV("tt", "diff", "--lib", "x.so", "--fn", "f", "--rtol", "1e-5x"),
     "--rtol: '1e-5x' is not a tolerance (a number >= 0)"},
    {ARGV("tt", "diff", "--lib", "x.so", "--fn", "f", "--rtol="),
     "--rtol: '' is not a tolerance (a number >= 0)"},
    {ARGV("tt", "diff", "--lib", "x.so", "--fn", "f", "--atol", "inf"),
     "--atol: 'inf' is not a tolerance (a number >= 0)"},
    {ARGV("tt", "diff", "--lib", "x.so", "--fn", "f", "--atol", "nan"),
     "--atol: 'nan' is not a tolerance (a number >= 0)"},
    {ARGV("tt", "diff", "--lib", "x.so", "--fn", "f", "--atol", "1e999"),
     "--atol: '1e999' is not a tolerance (a number >= 0)"},
    {ARGV("tt", "diff", "--lib", "x.so", "--fn", "f", "--rtol", "1", "--rtol", "2"),
     "diff: --rtol is given twice"},
    {ARGV("tt", "diff", "--lib", "x.so", "--fn", "f", "--symbolic=yes"),
     "diff: --symbolic takes no value"},
    {ARGV("tt", "diff", "--lib", "x.so", "--fn", "f", "--mode", "symbolic"),
     "diff: --mode is not an option of tt diff (see tt diff --help)"},
    {ARGV("tt", "diff", "--lib", "x.so", "--fn", "f", "--compile"),
     "diff: --compile is not an option of tt diff (see tt diff --help)"},
    {ARGV("tt", "profile", "--lib", "x.so", "--fn", "f", "--rtol", "1"),
     "profile: --rtol is not an option of tt profile (see tt profile --help)"},
    {ARGV("tt", "diff", "a.log"),
     "diff: one hash log given ('a.log'); tt diff A.log B.log compares two (see tt diff --help)"},
    {ARGV("tt", "diff", "a.log", "b.log", "c.log"),
     "diff: unexpected argument 'c.log' (tt diff compares two hash logs; see tt diff --help)"},
    {ARGV("tt", "diff", "a.log", "b.log", "--lib", "x.so"),
     "diff: --lib does not go with two hash logs: tt diff A.log B.log compares logs, tt diff "
     "--lib FILE --fn NAME compares a function compiled with eager"},
    {ARGV("tt", "diff", "--lib", "x.so", "--fn", "f", "a.log", "b.log"),
     "diff: --lib does not go with two hash logs: tt diff A.log B.log compares logs, tt diff "
     "--lib FILE --fn NAME compares a function compiled with eager"},
    {ARGV("tt", "diff", "a.log", "b.log", "--rtol", "0"),
     "diff: --rtol does not go with two hash logs: tt diff A.log B.log compares logs, tt diff "
     "--lib FILE --fn NAME compares a function compiled with eager"},
    {ARGV("tt", "diff", "a.log", "--input", "f32[2]", "b.log"),
     "diff: --input does not go with two hash logs: tt diff A.log B.log compares logs, tt diff "
     "--lib FILE --fn NAME compares a function compiled with eager"},
    {ARGV("tt", "diff", "-x", "b.log"), "diff: unexpected argument '-x' (options start with --; "
                                        "see tt diff --help)"},
};

START_TEST(test_parse_errors)
{
    for (size_t k = 0; k < sizeof bad_args / sizeof bad_args[0]; k++) {
        tt_cli_args a;
        char err[512] = "";
        int rc = tt_cli_parse(bad_args[k].argc, bad_args[k].argv, &a, err, sizeof err);
        if (!bad_args[k].message) {
            ck_assert_int_eq(rc, 0);
        } else {
            ck_assert_msg(rc == -1, "case %zu (%s) parsed", k, bad_args[k].message);
            ck_assert_str_eq(err, bad_args[k].message);
            ck_assert_msg(!strchr(err, '\n'), "one line: %s", err);
        }
        tt_cli_args_clear(&a);
    }
}
END_TEST

/* At most TT_CLI_MAX_INPUTS inputs; the ones parsed before the error are
 * released by tt_cli_args_clear. */
START_TEST(test_parse_too_many_inputs)
{
    enum { N = 2 * TT_CLI_MAX_INPUTS + 7 };
    char *argv[N];
    int argc = 0;
    argv[argc++] = "tt";
    argv[argc++] = "opcheck";
    argv[argc++] = "--op=a::b";
    while (argc + 2 <= N) {
        argv[argc++] = "--input";
        argv[argc++] = "i64[3]=1,2,3";
    }
    tt_cli_args a;
    char err[256];
    ck_assert_int_eq(tt_cli_parse(argc, argv, &a, err, sizeof err), -1);
    ck_assert_str_eq(err, "too many --input (at most 64)");
    ck_assert_int_eq(a.ninputs, TT_CLI_MAX_INPUTS);
    tt_cli_args_clear(&a);
    ck_assert_int_eq(tt_cli_parse(3 + 2 * TT_CLI_MAX_INPUTS, argv, &a, err, sizeof err), 0);
    ck_assert_int_eq(a.ninputs, TT_CLI_MAX_INPUTS);
    tt_cli_args_clear(&a);
}
END_TEST

/* ================================================================= help */

static const struct {
    tt_cli_cmd cmd;
    const char *has[16];
    const char *lacks[6];
} help_cases[] = {
    {TT_CLI_TRACE,
     {"Usage: tt trace --lib FILE --fn NAME", "--lib FILE", "--init NAME", "--fn NAME",
      "--input SPEC", "--mode MODE", "--fullgraph", "--nout N", "--seed N", "--dot FILE",
      "--svg FILE", "--png FILE", "--json", "--save DIR"},
     {"--op", "--check"}},
    {TT_CLI_EXPLAIN,
     {"Usage: tt explain", "--lib FILE", "--init NAME", "--fn NAME", "--input SPEC",
      "--fullgraph", "--nout N", "--seed N", "--dot FILE", "--svg FILE", "--png FILE",
      "--help", "file:line", "Exit status"},
     {"--mode", "--op", "--check"}},
    {TT_CLI_OPCHECK,
     {"Usage: tt opcheck --op NAME", "--op NAME", "--lib FILE", "--init NAME",
      "--input SPEC", "--seed N", "--check LIST", "--help", "int[N]", "i64[4]=0,0,10,10",
      "faketensor", "Exit status 1 when a check failed"},
     {"--fn", "--mode", "--dot", "--nout"}},
    {TT_CLI_OPS,
     {"Usage: tt ops [--lib FILE]", "--lib FILE", "--init NAME", "--help"},
     {"--fn", "--input", "--op", "Input specs:"}},
    {TT_CLI_LIST,
     {"Usage: tt list FILE", "--lib FILE", "tt_model_fns", "--help"},
     {"--fn", "--input", "--op", "Input specs:"}},
    {TT_CLI_PROFILE,
     {"Usage: tt profile --lib FILE --fn NAME", "--lib FILE", "--fn NAME", "--input SPEC",
      "--compile", "--warmup N", "--runs N", "--rows N", "--chrome FILE", "--svg FILE", "--json",
      "--seed N", "Input specs:", "Exit status"},
     {"--mode", "--op", "--dot", "--png", "--fullgraph", "--save"}},
    {TT_CLI_DIFF,
     {"Usage: tt diff --lib FILE --fn NAME", "\n       tt diff A.log B.log [--json]\n",
      "--lib FILE", "--init NAME", "--fn NAME", "--input SPEC", "--seed N", "--nout N",
      "--symbolic", "--rtol X", "--atol X", "(default 1e-5)", "(default 1e-6)", "--json",
      "1 when the results or the logs differ", "Input specs:"},
     {"--mode", "--op", "--compile", "--dot", "(required)", "--runs"}},
    {TT_CLI_NONE,
     {"Usage: tt COMMAND", "tt trace", "tt explain", "tt profile", "tt opcheck", "tt ops",
      "tt list", "--version", "--help", "tt_model_fns", "tt_model_init", "tt_model_fini",
      "Input specs:", "Exit status",
      "\n  diff      tt diff --lib FILE --fn NAME [--input SPEC]... [options]\n"
      "            tt diff A.log B.log [--json]\n"},
     {NULL}},
};

START_TEST(test_help)
{
    for (size_t k = 0; k < sizeof help_cases / sizeof help_cases[0]; k++) {
        char *h = tt_cli_help(help_cases[k].cmd);
        ck_assert_ptr_nonnull(h);
        for (int i = 0; i < 16 && help_cases[k].has[i]; i++)
            ck_assert_msg(strstr(h, help_cases[k].has[i]), "help of '%s' lacks '%s'",
                          tt_cli_cmd_name(help_cases[k].cmd), help_cases[k].has[i]);
        for (int i = 0; i < 6 && help_cases[k].lacks[i]; i++)
            ck_assert_msg(!strstr(h, help_cases[k].lacks[i]), "help of '%s' has '%s'",
                          tt_cli_cmd_name(help_cases[k].cmd), help_cases[k].lacks[i]);
        /* Lines fit a terminal. */
        for (const char *p = h; *p;) {
            size_t len = strcspn(p, "\n");
            ck_assert_msg(len <= 80, "long line in help: %.*s", (int)len, p);
            p += len + (p[len] != 0);
        }
        free(h);
    }
    ck_assert_str_eq(tt_cli_cmd_name(TT_CLI_OPCHECK), "opcheck");
    ck_assert_str_eq(tt_cli_cmd_name(TT_CLI_NONE), "");
}
END_TEST

/* Every option a command accepts is in its help, and every option in its
 * help is accepted: the parser and the help read one table. */
START_TEST(test_help_matches_parser)
{
    static const char *const all[] = {"--lib",  "--init", "--fn",       "--op",   "--input",
                                      "--mode", "--fullgraph", "--nout", "--seed",
                                      "--check", "--dot", "--svg",   "--png",  "--json",
                                      "--save", "--print", "--compile", "--runs", "--warmup",
                                      "--rows", "--chrome", "--symbolic", "--rtol", "--atol"};
    const tt_cli_cmd cmds[] = {TT_CLI_TRACE, TT_CLI_EXPLAIN, TT_CLI_PROFILE, TT_CLI_DIFF,
                               TT_CLI_OPCHECK, TT_CLI_OPS, TT_CLI_LIST};
    for (int c = 0; c < 7; c++) {
        char *h = tt_cli_help(cmds[c]);
        ck_assert_ptr_nonnull(h);
        for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
            char opt[32];
            snprintf(opt, sizeof opt, "  %s ", all[k]);
            bool in_help = strstr(h, opt) != NULL;
            tt_cli_args a;
            char err[256] = "", name[16];
            snprintf(name, sizeof name, "%s", tt_cli_cmd_name(cmds[c]));
            tt_cli_parse(ARGV("tt", name, (char *)all[k], "1"), &a, err, sizeof err);
            bool unknown = strstr(err, "is not an option") != NULL;
            tt_cli_args_clear(&a);
            ck_assert_msg(in_help != unknown, "tt %s: %s in help: %d, parser: %s", name,
                          all[k], in_help, err);
        }
        free(h);
    }
}
END_TEST

/* ============================================== opcheck arguments of specs */

static tt_status clone_kernel(tt_frame *f)
{
    tt_tensor *x;
    tt_status st = tt_arg_tensor(f, 0, &x);
    return st ? st : tt_return(f, 0, tt_clone(x));
}

static tt_library *cli_lib;

static void define_ops(void)
{
    cli_lib = tt_library_new(TT_LIB_DEF, "clitest");
    ck_assert_ptr_nonnull(cli_lib);
    const char *schemas[] = {
        "clitest::many(Tensor x, int[2] size, int n, float alpha, bool flag, Scalar s, "
        "int[] dims, float[] ws, SymInt k, Scalar t, int d=3) -> Tensor",
        "clitest::strs(Tensor x, str mode) -> Tensor",
        "clitest::lists(Tensor x, Tensor[] xs) -> Tensor",
    };
    for (int i = 0; i < 3; i++)
        ck_assert_msg(tt_custom_op_define(cli_lib, &(tt_custom_op_spec){.schema = schemas[i],
                                                                        .mutates_args = "",
                                                                        .kernel = clone_kernel}),
                      "%s", tt_errmsg());
}

/* Parses `tt opcheck --op OP --input SPEC...` and maps the inputs. */
static int map_args(const char *op, const char *const *specs, int n, tt_value *vals, int *nargs,
                    tt_tensor **owned, int *nowned, int64_t **lists, char *err, size_t errn)
{
    tt_cli_args a;
    char perr[256];
    char *argv[3 + 2 * 16] = {"tt", "opcheck", "--op"};
    int argc = 3;
    argv[argc++] = (char *)op;
    for (int i = 0; i < n; i++) {
        argv[argc++] = "--input";
        argv[argc++] = (char *)specs[i];
    }
    ck_assert_msg(tt_cli_parse(argc, argv, &a, perr, sizeof perr) == 0, "%s", perr);
    const tt_op *o = tt_op_find(op);
    ck_assert_ptr_nonnull(o);
    int rc = tt_cli_opcheck_args(o, &a, vals, nargs, owned, nowned, lists, err, errn);
    tt_cli_args_clear(&a);
    return rc;
}

START_TEST(test_opcheck_args)
{
    define_ops();
    const char *specs[] = {"f32[2,3]:requires_grad", "i64[2]=4,5", "i32[]=-3", "f64[]=0.25",
                           "bool[]=true", "i64[]=7", "i64[3]=2,1,0", "f32[2]=0.5,1.5",
                           "u8[]=9", "f32[]=2.5"};
    tt_value v[TT_CLI_MAX_INPUTS];
    tt_tensor *owned[TT_CLI_MAX_INPUTS];
    int nargs, nowned;
    int64_t *lists;
    char err[512] = "";
    tt_manual_seed(5);
    int rc = map_args("clitest::many", specs, 10, v, &nargs, owned, &nowned, &lists, err,
                      sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_int_eq(nargs, 10); /* d takes its default in tt_opcheck */
    ck_assert_int_eq(nowned, 1);
    ck_assert(v[0].kind == TT_V_TENSOR && v[0].u.t == owned[0]);
    ck_assert(!tt_is_fake(owned[0]) && tt_requires_grad(owned[0]));
    ck_assert(v[1].kind == TT_V_INTS && v[1].n == 2 && v[1].u.ints[0] == 4 &&
              v[1].u.ints[1] == 5);
    ck_assert(v[2].kind == TT_V_INT && v[2].u.i == -3);
    ck_assert(v[3].kind == TT_V_FLOAT && v[3].u.f == 0.25);
    ck_assert(v[4].kind == TT_V_BOOL && v[4].u.b);
    ck_assert(v[5].kind == TT_V_INT && v[5].u.i == 7); /* an integral Scalar */
    ck_assert(v[6].kind == TT_V_INTS && v[6].n == 3 && v[6].u.ints[2] == 0);
    ck_assert(v[7].kind == TT_V_FLOATS && v[7].n == 2 && v[7].u.floats[1] == 1.5);
    ck_assert(v[8].kind == TT_V_INT && v[8].u.i == 9); /* SymInt */
    ck_assert(v[9].kind == TT_V_FLOAT && v[9].u.f == 2.5); /* a float Scalar */
    /* The arguments are complete: the op runs on them. */
    tt_value out = {0};
    tt_no_grad_begin(); /* clitest::many has no autograd; x requires grad */
    ck_assert_msg(tt_op_call(tt_op_find("clitest::many"), v, nargs, &out, 1) == TT_OK, "%s",
                  tt_errmsg());
    tt_no_grad_end();
    tt_value_clear(&out);
    for (int i = 0; i < nowned; i++)
        tt_release(owned[i]);
    free(lists);
    cli_lib = tt_library_free(cli_lib);
}
END_TEST

static const struct {
    const char *op;
    const char *specs[11];
    const char *message;
} bad_opcheck[] = {
    {"clitest::strs", {"f32[2]", "i64[]=1"},
     "clitest::strs: argument 'mode' (#2) is str, which tt opcheck cannot make from an "
     "--input spec"},
    {"clitest::lists", {"f32[2]", "f32[2]"},
     "clitest::lists: argument 'xs' (#2) is Tensor[], which tt opcheck cannot make from an "
     "--input spec"},
    {"clitest::strs", {"f32[2]", "i64[]=1", "i64[]=1"},
     "clitest::strs takes 2 arguments, got 3 --input"},
    {"clitest::strs", {"f32[2]"},
     "clitest::strs needs argument 'mode' (#2, str): add an --input for it (1 given)"},
    {"clitest::many", {"f32[2]", "i64[3]=1,2,3"},
     "clitest::many: argument 'size' (#2) is int[2]: give it as i64[2]=... (a 1-dim integer "
     "spec with values), not 'i64[3]=1,2,3'"},
    {"clitest::many", {"f32[2]", "f32[2]=1,2"},
     "clitest::many: argument 'size' (#2) is int[2]: give it as i64[2]=... (a 1-dim integer "
     "spec with values), not 'f32[2]=1,2'"},
    {"clitest::many", {"f32[2]", "i64[2]"},
     "clitest::many: argument 'size' (#2) is int[2]: give it as i64[2]=... (a 1-dim integer "
     "spec with values), not 'i64[2]'"},
    {"clitest::many", {"f32[2]", "i64[1,2]=1,2"},
     "clitest::many: argument 'size' (#2) is int[2]: give it as i64[2]=... (a 1-dim integer "
     "spec with values), not 'i64[1,2]=1,2'"},
    {"clitest::many", {"f32[2]", "i64[2]=1,2", "i64[1]=3"},
     "clitest::many: argument 'n' (#3) is int: give it as a 0-dim spec with a value "
     "(i64[]=3), not 'i64[1]=3'"},
    {"clitest::many", {"f32[2]", "i64[2]=1,2", "f64[]=3"},
     "clitest::many: argument 'n' (#3) is int: give it as a 0-dim spec with a value "
     "(i64[]=3), not 'f64[]=3'"},
    {"clitest::many", {"f32[2]", "i64[2]=1,2", "i64[]=3", "bool[]=1"},
     "clitest::many: argument 'alpha' (#4) is float: give it as a 0-dim spec with a value "
     "(f64[]=0.5), not 'bool[]=1'"},
    {"clitest::many", {"f32[2]", "i64[2]=1,2", "i64[]=3", "f64[]:requires_grad"},
     "clitest::many: argument 'alpha' (#4) is float, not a tensor: ':requires_grad' does not "
     "apply to it"},
    {"clitest::many", {"f32[2]", "i64[2]=1,2", "i64[]=3", "f64[]=1", "i64[]=1"},
     "clitest::many: argument 'flag' (#5) is bool: give it as a 0-dim spec with a value "
     "(bool[]=1), not 'i64[]=1'"},
    {"clitest::many",
     {"f32[2]", "i64[2]=1,2", "i64[]=3", "f64[]=1", "bool[]=1", "f64[]=1", "f64[2]=1,2"},
     "clitest::many: argument 'dims' (#7) is int[]: give it as i64[N]=... (a 1-dim integer "
     "spec with values), not 'f64[2]=1,2'"},
    {"clitest::many",
     {"f32[2]", "i64[2]=1,2", "i64[]=3", "f64[]=1", "bool[]=1", "f64[]=1", "i64[2]=1,2",
      "bool[1]=1"},
     "clitest::many: argument 'ws' (#8) is float[]: give it as f64[N]=... (a 1-dim number "
     "spec with values), not 'bool[1]=1'"},
};

START_TEST(test_opcheck_args_errors)
{
    define_ops();
    for (size_t k = 0; k < sizeof bad_opcheck / sizeof bad_opcheck[0]; k++) {
        int n = 0;
        while (n < 11 && bad_opcheck[k].specs[n])
            n++;
        tt_value v[TT_CLI_MAX_INPUTS];
        tt_tensor *owned[TT_CLI_MAX_INPUTS];
        int nargs, nowned;
        int64_t *lists;
        char err[512] = "";
        int rc = map_args(bad_opcheck[k].op, bad_opcheck[k].specs, n, v, &nargs, owned,
                          &nowned, &lists, err, sizeof err);
        ck_assert_msg(rc == -1, "case %zu mapped", k);
        ck_assert_str_eq(err, bad_opcheck[k].message);
        /* What was made before the error is the caller's to release. */
        for (int i = 0; i < nowned; i++)
            tt_release(owned[i]);
        free(lists);
    }
    cli_lib = tt_library_free(cli_lib);
}
END_TEST

/* ============================================= the tt binary, end to end */

typedef struct {
    int status; /* exit status; -1 when it did not exit normally */
    char *out, *err;
    char dir[64]; /* a scratch folder for the run's files */
} run_result;

static const char *env_path(const char *name)
{
    const char *p = getenv(name);
    ck_assert_msg(p && *p, "%s is not set (meson test sets it)", name);
    return p;
}

static void scratch_dir(run_result *r)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(r->dir, sizeof r->dir, "%s/tt-cli-XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(r->dir));
}

/* Runs TT_BIN with args (NULL-terminated; "LIB" stands for TT_EXAMPLE_LIB,
 * "ODD" for TT_ODD_LIB
 * and "@name" for a file in the run's scratch folder), capturing stdout
 * and stderr through files so neither pipe can fill and block. */
static void run_tt(run_result *r, const char *const *args)
{
    char *argv[64], paths[64][160], out[128], err[128];
    int argc = 0;
    argv[argc++] = (char *)env_path("TT_BIN");
    for (; *args; args++, argc++) {
        ck_assert_int_lt(argc, 63);
        if (!strcmp(*args, "LIB"))
            argv[argc] = (char *)env_path("TT_EXAMPLE_LIB");
        else if (!strcmp(*args, "ODD"))
            argv[argc] = (char *)env_path("TT_ODD_LIB");
        else if ((*args)[0] == '@' || strstr(*args, "=@")) {
            const char *at = strchr(*args, '@');
            snprintf(paths[argc], sizeof paths[argc], "%.*s%s/%s", (int)(at - *args), *args,
                     r->dir, at + 1);
            argv[argc] = paths[argc];
        } else {
            argv[argc] = (char *)*args;
        }
    }
    argv[argc] = NULL;
    snprintf(out, sizeof out, "%s/stdout", r->dir);
    snprintf(err, sizeof err, "%s/stderr", r->dir);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    ck_assert_msg(rc == 0, "cannot run %s: %s", argv[0], strerror(rc));
    int ws;
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    r->out = tt_test_read_file(out);
    r->err = tt_test_read_file(err);
}

#define TT(r, ...) run_tt((r), (const char *const[]){__VA_ARGS__, NULL})

static void run_begin(run_result *r)
{
    memset(r, 0, sizeof *r);
    scratch_dir(r);
}

/* Frees the captured output and removes the scratch folder. */
static void run_end(run_result *r)
{
    free(r->out);
    free(r->err);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void expect_status(const run_result *r, int status)
{
    ck_assert_msg(r->status == status, "exit status %d, expected %d\nstdout:\n%.1500s\nstderr:\n%.1500s",
                  r->status, status, r->out, r->err);
}

/* A usage error: status 2, nothing on stdout, exactly one line on stderr,
 * and that line is `want`. */
static void expect_usage_error(const run_result *r, const char *want)
{
    expect_status(r, 2);
    ck_assert_str_eq(r->out, "");
    char line[1024];
    snprintf(line, sizeof line, "%s\n", want);
    ck_assert_str_eq(r->err, line);
}

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* True when text has `line` as a whole line. */
static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

/* The line of tools/<file> holding the first `call` after `fn`. */
static int source_line(const char *file, const char *fn, const char *call)
{
    char path[512];
    snprintf(path, sizeof path, "%s/../tools/%s", env_path("TT_TEST_SRCDIR"), file);
    char *src = tt_test_read_file(path);
    const char *f = strstr(src, fn);
    ck_assert_msg(f != NULL, "no %s in %s", fn, file);
    const char *at = strstr(f, call);
    ck_assert_msg(at != NULL, "no %s after %s in %s", call, fn, file);
    int line = 1;
    for (const char *p = src; p < at; p++)
        line += *p == '\n';
    free(src);
    return line;
}

static void plain_crop_location(char *buf, size_t n)
{
    int line = source_line("tutorial_ops.c", "\ntt_status tutorial_crop_plain(", "tt_data(");
    snprintf(buf, n, "tutorial_ops.c:%d in tutorial_crop_plain()", line);
}

#define MLP_INPUTS                                                                         \
    "--input", "f32[256,784]", "--input", "f32[784,512]", "--input", "f32[512]", "--input", \
        "f32[512,256]", "--input", "f32[256]", "--input", "f32[256,10]", "--input", "f32[10]"

START_TEST(test_e2e_trace_mlp)
{
    run_result r;
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "mlp_forward", MLP_INPUTS, "--dot", "@mlp.dot");
    expect_status(&r, 0);
    ck_assert_str_eq(r.err, "");
    /* The inputs have the model table's names. */
    ck_assert_msg(strstr(r.out, "def mlp_forward(x: \"f32[256, 784]\", w1: \"f32[784, 512]\", "
                                "b1: \"f32[512]\", w2: \"f32[512, 256]\", b2: \"f32[256]\", "
                                "w3: \"f32[256, 10]\", b3: \"f32[10]\"):\n"),
                  "%.1500s", r.out);
    ck_assert_int_eq(count(r.out, "= tt::matmul("), 3);
    ck_assert_int_eq(count(r.out, "= tt::relu("), 2);
    ck_assert_int_eq(count(r.out, "= tt::add.Tensor("), 3);
    /* Each node names the model's line that made it: the helper's. */
    char want[256];
    snprintf(want, sizeof want, "    add_2: \"f32[256, 10]\" = tt::add.Tensor(matmul_2, b3)"
                                "  # example_model.c:%d in dense\n",
             source_line("example_model.c", "\nstatic tt_tensor *dense(", "tt_add("));
    ck_assert_msg(strstr(r.out, want), "no '%s' in:\n%.1500s", want, r.out);
    ck_assert_msg(strstr(r.out, "return (add_2,)"), "%.1500s", r.out);
    char path[128];
    snprintf(path, sizeof path, "%s/mlp.dot", r.dir);
    char *dot = tt_test_read_file(path);
    ck_assert_msg(strncmp(dot, "digraph", 7) == 0, "%.40s", dot);
    ck_assert_msg(strstr(dot, "tt::matmul"), "the DOT names the ops");
    free(dot);
    run_end(&r);

    /* Symbolic: the input sizes become symbols. */
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "mlp_forward", "--mode", "symbolic", MLP_INPUTS);
    expect_status(&r, 0);
    ck_assert_msg(strstr(r.out, "x: \"f32[s0, s1]\""), "%.1500s", r.out);
    ck_assert_msg(strstr(r.out, "matmul: \"f32[s0, s3]\" = tt::matmul(x, w1)"), "%.1500s", r.out);
    run_end(&r);

    /* Real mode computes (on random inputs) while it records: same graph. */
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "mlp_forward", "--mode=real", "--seed", "3",
       "--input", "f32[2,784]", "--input", "f32[784,512]", "--input", "f32[512]", "--input",
       "f32[512,256]", "--input", "f32[256]", "--input", "f32[256,10]", "--input", "f32[10]");
    expect_status(&r, 0);
    ck_assert_int_eq(count(r.out, "= tt::matmul("), 3);
    ck_assert_msg(strstr(r.out, "add_2: \"f32[2, 10]\""), "%.1500s", r.out);
    run_end(&r);

    /* The model table says how many inputs: another count is a usage
     * error, before the function is called. */
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "mlp_forward", "--input", "f32[2,784]");
    expect_usage_error(&r, "tt: --fn mlp_forward takes 7 inputs (x, w1, b1, w2, b2, w3, b3), "
                           "got 1 --input");
    run_end(&r);
}
END_TEST

START_TEST(test_e2e_pictures)
{
    run_result r;
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "crop_pipeline", "--input", "f32[3,64,64]",
       "--fullgraph", "--svg", "@crop.svg", "--png=@crop.png");
    expect_status(&r, 0);
    /* One opaque node for the custom op. */
    ck_assert_int_eq(count(r.out, "= mylib::crop(img, [0, 0, 10, 10])"), 1);
    ck_assert_int_eq(count(r.out, "= tt::sin(crop)"), 1);
    char path[128];
    snprintf(path, sizeof path, "%s/crop.svg", r.dir);
    char *svg = tt_test_read_file(path);
    ck_assert_msg(strstr(svg, "<svg") && strstr(svg, "mylib::crop"), "%.80s", svg);
    free(svg);
    snprintf(path, sizeof path, "%s/crop.png", r.dir);
    char *png = tt_test_read_file(path);
    ck_assert_msg(memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0, "not a PNG");
    free(png);
    run_end(&r);

    /* A picture that cannot be written: status 1 with the reason. */
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "crop_pipeline", "--input", "f32[3,64,64]",
       "--dot", "@no/such/dir/g.dot");
    expect_status(&r, 1);
    ck_assert_msg(strstr(r.err, "tt: cannot write '") &&
                      strstr(r.err, "no/such/dir/g.dot': No such file or directory"),
                  "%.1500s", r.err);
    ck_assert_msg(strstr(r.out, "mylib::crop"), "the graph is printed before: %s", r.out);
    run_end(&r);

    /* The tutorial's f(x): the mutable op records its write. */
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "numpy_sin_fn", "--input", "f32[3]");
    expect_status(&r, 0);
    ck_assert_msg(strstr(r.out, "mylib::numpy_sin(x, empty_like)  # writes empty_like "
                                "(empty_like is numpy_sin after the write); example_model.c:"),
                  "%.1500s", r.out);
    run_end(&r);
}
END_TEST

/* The line of tools/tutorial_ops.c that reads the pixels in
 * tutorial_crop_plain: "tutorial_ops.c:N in tutorial_crop_plain()". */

START_TEST(test_e2e_explain)
{
    char where[128];
    plain_crop_location(where, sizeof where);
    run_result r;
    run_begin(&r);
    TT(&r, "explain", "--lib", "LIB", "--fn", "crop_plain_pipeline", "--input", "f32[3,64,64]",
       "--dot", "@explain.dot");
    expect_status(&r, 0);
    /* One break (the pixel read), so two graphs, both printed. */
    ck_assert_msg(strstr(r.out, "Graph count: 2\nGraph break count: 1\n"), "%.1500s", r.out);
    ck_assert_int_eq(count(r.out, "\ndef graph_"), 2);
    /* The first break: its kind, its reason and the line that reads data. */
    ck_assert_msg(strstr(r.out, "Break reasons:\n  1. data read: tt_data reads the data of "
                                "f32[64, 64, 3]"),
                  "%.1500s", r.out);
    ck_assert_msg(strstr(r.out, where), "no '%s' in:\n%.1500s", where, r.out);
    ck_assert_msg(strstr(r.out, "Graph 1: tt::permute, tt::contiguous\n"
                                "  Graph 2: tt::permute, tt::sin\n"),
                  "%.1500s", r.out);
    char path[128];
    snprintf(path, sizeof path, "%s/explain.dot", r.dir);
    char *dot = tt_test_read_file(path);
    ck_assert_msg(strncmp(dot, "digraph", 7) == 0 && count(dot, "subgraph cluster") == 2,
                  "%.1500s", dot);
    free(dot);
    run_end(&r);

    /* With the custom op there is nothing to explain. */
    run_begin(&r);
    TT(&r, "explain", "--lib", "LIB", "--fn", "crop_pipeline", "--input", "f32[3,64,64]");
    expect_status(&r, 0);
    ck_assert_msg(strstr(r.out, "Graph count: 1\nGraph break count: 0\n"), "%.1500s", r.out);
    run_end(&r);
}
END_TEST

START_TEST(test_e2e_fullgraph_break)
{
    char where[128];
    plain_crop_location(where, sizeof where);
    run_result r;
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "crop_plain_pipeline", "--input", "f32[3,64,64]",
       "--fullgraph");
    expect_status(&r, 1);
    ck_assert_str_eq(r.out, "");
    ck_assert_msg(strncmp(r.err, "tt: Graph break: data read\n  Explanation: tt_data reads ",
                          56) == 0, "%.1500s", r.err);
    ck_assert_msg(strstr(r.err, "  User code: ") && strstr(r.err, where), "no '%s' in %.1500s",
                  where, r.err);
    ck_assert_msg(!strstr(r.err, "tt explain"), "%.1500s", r.err);
    run_end(&r);

    /* Without --fullgraph a trace still fails at the break, and says where
     * to look next. */
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "crop_plain_pipeline", "--input", "f32[3,64,64]");
    expect_status(&r, 1);
    ck_assert_msg(strstr(r.err, where) &&
                      strstr(r.err, "\ntt: tt explain with the same options splits the trace"),
                  "%.1500s", r.err);
    run_end(&r);
}
END_TEST

START_TEST(test_e2e_opcheck)
{
    run_result r;
    run_begin(&r);
    TT(&r, "opcheck", "--lib", "LIB", "--op", "mylib::crop", "--input", "f32[3,64,64]",
       "--input", "i64[4]=0,0,10,10");
    expect_status(&r, 0);
    ck_assert_msg(strstr(r.out, "opcheck mylib::crop: 3 passed, 0 failed, 1 not exercised"),
                  "%.1500s", r.out);
    ck_assert_msg(strstr(r.out, "  faketensor             passed\n"), "%.1500s", r.out);
    ck_assert_str_eq(r.err, "");
    run_end(&r);

    /* With an input that requires grad, autograd is checked too. */
    run_begin(&r);
    TT(&r, "opcheck", "--lib", "LIB", "--op", "mylib::crop", "--input",
       "f64[3,16,16]:requires_grad", "--input", "i64[4]=2,3,10,12", "--seed", "9");
    expect_status(&r, 0);
    ck_assert_msg(strstr(r.out, "opcheck mylib::crop: 4 passed, 0 failed, 0 not exercised"),
                  "%.1500s", r.out);
    run_end(&r);

    run_begin(&r);
    TT(&r, "opcheck", "--lib", "LIB", "--op", "mylib::crop_nopermute", "--input",
       "f32[3,64,64]", "--input", "i64[4]=0,0,10,10");
    expect_status(&r, 1);
    ck_assert_msg(strstr(r.out, "1 failed"), "%.1500s", r.out);
    ck_assert_msg(strstr(r.out, "  faketensor             FAILED: output 0: strides differ: "
                                "the real kernel gives (1, 30, 3), the fake kernel "
                                "(100, 10, 1)"),
                  "%.1500s", r.out);
    run_end(&r);

    /* --check runs only the checks asked for. */
    run_begin(&r);
    TT(&r, "opcheck", "--lib", "LIB", "--op", "mylib::crop_nopermute", "--input",
       "f32[3,64,64]", "--input", "i64[4]=0,0,10,10", "--check", "schema");
    expect_status(&r, 0);
    ck_assert_msg(strstr(r.out, "1 passed, 0 failed, 0 not exercised, 3 not run"), "%.1500s", r.out);
    run_end(&r);

    /* A built-in needs no library. */
    run_begin(&r);
    TT(&r, "opcheck", "--op", "tt::mul.Tensor", "--input", "f64[2,3]:requires_grad", "--input",
       "f64[3]");
    expect_status(&r, 0);
    ck_assert_msg(strstr(r.out, "opcheck tt::mul.Tensor: 4 passed, 0 failed"), "%.1500s", r.out);
    run_end(&r);

    /* The op itself failing on the arguments is a failed check (status 1). */
    run_begin(&r);
    TT(&r, "opcheck", "--lib", "LIB", "--op", "mylib::crop", "--input", "f32[3,8,8]",
       "--input", "i64[4]=0,0,10,10");
    expect_status(&r, 1);
    ck_assert_msg(strstr(r.out, "must lie in the 8x8 image"), "%.1500s", r.out);
    run_end(&r);
}
END_TEST

START_TEST(test_e2e_ops)
{
    run_result r;
    run_begin(&r);
    TT(&r, "ops", "--lib", "LIB");
    expect_status(&r, 0);
    ck_assert(has_line(r.out, "mylib::crop(Tensor pic, int[4] box) -> Tensor"));
    ck_assert(has_line(r.out, "mylib::numpy_sin(Tensor input, Tensor(a!) output) -> ()"));
    ck_assert(has_line(r.out, "tt::matmul(Tensor self, Tensor other) -> Tensor"));
    char last[512];
    snprintf(last, sizeof last, "# %d ops: %d built-in (tt::), 4 more with %s",
             count(r.out, "\n") - 1, count(r.out, "\ntt::"), env_path("TT_EXAMPLE_LIB"));
    ck_assert(has_line(r.out, last));
    run_end(&r);

    run_begin(&r);
    TT(&r, "ops");
    expect_status(&r, 0);
    ck_assert_msg(!strstr(r.out, "mylib::"), "no library, no custom ops");
    ck_assert_msg(strncmp(r.out, "tt::", 4) == 0, "%.80s", r.out);
    run_end(&r);
}
END_TEST

START_TEST(test_e2e_list)
{
    run_result r;
    const char *const forms[2][3] = {{"list", "LIB", NULL}, {"list", "--lib", "LIB"}};
    for (int k = 0; k < 2; k++) {
        run_begin(&r);
        if (forms[k][2])
            TT(&r, forms[k][0], forms[k][1], forms[k][2]);
        else
            TT(&r, forms[k][0], forms[k][1]);
        expect_status(&r, 0);
        ck_assert_str_eq(r.err, "");
        char head[512];
        snprintf(head, sizeof head, "# 5 model functions in %s", env_path("TT_EXAMPLE_LIB"));
        ck_assert_msg(has_line(r.out, head), "%.1500s", r.out);
        ck_assert(has_line(r.out, "mlp_forward(x, w1, b1, w2, b2, w3, b3) -> 1 output"));
        ck_assert(has_line(r.out, "    logits of a three-layer perceptron, "
                                  "relu(relu(x@w1+b1)@w2+b2)@w3+b3"));
        ck_assert(has_line(r.out, "crop_pipeline(img) -> 1 output"));
        ck_assert(has_line(r.out, "crop_plain_pipeline(img) -> 1 output"));
        ck_assert(has_line(r.out, "numpy_sin_fn(x) -> 1 output"));
        ck_assert(has_line(r.out, "scale_by_calls(x) -> 1 output"));
        ck_assert(has_line(r.out, "    x * (the number of calls so far): a C global the trace "
                                  "freezes (tt diff's demo)"));
        ck_assert_int_eq(count(r.out, "\n"), 11);
        run_end(&r);
    }
}
END_TEST

/* The JSON document of a run: parsed by jansson, and by python3 -m
 * json.tool (what a script would use) from the file tt wrote. */
static json_t *run_json(const run_result *r)
{
    json_error_t jerr;
    json_t *doc = json_loads(r->out, 0, &jerr);
    ck_assert_msg(doc != NULL, "not JSON (line %d: %s):\n%.1500s", jerr.line, jerr.text, r->out);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "python3 -m json.tool '%s/stdout' > /dev/null", r->dir);
    ck_assert_msg(system(cmd) == 0, "python3 -m json.tool rejects:\n%.1500s", r->out);
    return doc;
}

/* The node named `name` of a graph document, or NULL. */
static json_t *json_node(json_t *graph, const char *name)
{
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(graph, "nodes"), i, n)
    {
        if (!strcmp(json_string_value(json_object_get(n, "name")), name))
            return n;
    }
    return NULL;
}

START_TEST(test_e2e_json)
{
    run_result r;
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "crop_pipeline", "--input", "f32[3,64,64]", "--json");
    expect_status(&r, 0);
    ck_assert_str_eq(r.err, "");
    json_t *doc = run_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "command")), "trace");
    ck_assert_str_eq(json_string_value(json_object_get(doc, "function")), "crop_pipeline");
    ck_assert_str_eq(json_string_value(json_object_get(doc, "mode")), "fake");
    json_t *g = json_object_get(doc, "graph");
    ck_assert_int_eq(json_array_size(json_object_get(g, "nodes")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(g, "num_inputs")), 1);
    json_t *crop = json_node(g, "crop");
    ck_assert_ptr_nonnull(crop);
    ck_assert_str_eq(json_string_value(json_object_get(crop, "kind")), "op");
    ck_assert_str_eq(json_string_value(json_object_get(crop, "op")), "mylib::crop");
    json_t *args = json_object_get(crop, "args");
    ck_assert_int_eq(json_array_size(args), 2);
    json_t *pic = json_array_get(args, 0), *box = json_array_get(args, 1);
    ck_assert_str_eq(json_string_value(json_object_get(pic, "name")), "pic");
    ck_assert_str_eq(json_string_value(json_object_get(pic, "node")), "img");
    ck_assert_str_eq(json_string_value(json_object_get(box, "name")), "box");
    ck_assert_str_eq(json_string_value(json_object_get(box, "value")), "[0, 0, 10, 10]");
    ck_assert_ptr_null(json_object_get(box, "node"));
    json_t *out = json_array_get(json_object_get(crop, "outputs"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(out, "dtype")), "f32");
    json_t *shape = json_object_get(out, "shape");
    ck_assert_int_eq(json_array_size(shape), 3);
    ck_assert_int_eq(json_integer_value(json_array_get(shape, 1)), 10);
    /* An op node has the model's line that made it (the file as the
     * compiler was given it); other nodes have none. */
    json_t *made = json_object_get(crop, "location");
    ck_assert_int_eq(json_integer_value(json_object_get(made, "line")),
                     source_line("example_model.c", "\ntt_status crop_pipeline(",
                                 "tt_call("));
    ck_assert_str_eq(json_string_value(json_object_get(made, "function")), "crop_pipeline");
    const char *file = json_string_value(json_object_get(made, "file"));
    ck_assert_msg(file && strlen(file) >= 15 &&
                      !strcmp(file + strlen(file) - 15, "example_model.c"), "%s", file);
    ck_assert(json_is_null(json_object_get(json_node(g, "img"), "location")));
    ck_assert(json_is_null(json_object_get(json_node(g, "output"), "location")));
    json_t *res = json_object_get(json_node(g, "output"), "results");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(res, 0), "node")), "sin");
    ck_assert_msg(strstr(json_string_value(json_object_get(g, "text")), "= tt::sin(crop)"),
                  "the text print is in the document");
    json_decref(doc);
    run_end(&r);

    /* Symbolic sizes are the symbols' names. */
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "crop_pipeline", "--input", "f32[3,64,64]", "--json",
       "--mode", "symbolic");
    expect_status(&r, 0);
    doc = run_json(&r);
    shape = json_object_get(
        json_array_get(json_object_get(json_node(json_object_get(doc, "graph"), "img"),
                                       "outputs"),
                       0),
        "shape");
    ck_assert_str_eq(json_string_value(json_array_get(shape, 1)), "s1");
    json_decref(doc);
    run_end(&r);

    /* explain: the breaks with their reason and location, every graph. */
    char where[128];
    plain_crop_location(where, sizeof where);
    int line = atoi(strchr(where, ':') + 1);
    run_begin(&r);
    TT(&r, "explain", "--lib", "LIB", "--fn", "crop_plain_pipeline", "--input", "f32[3,64,64]",
       "--json");
    expect_status(&r, 0);
    doc = run_json(&r);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "graph_count")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "graph_break_count")), 1);
    json_t *brk = json_array_get(json_object_get(doc, "breaks"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(brk, "kind")), "data read");
    ck_assert_msg(strstr(json_string_value(json_object_get(brk, "reason")),
                         "tt_data reads the data of f32[64, 64, 3]"), "reason");
    json_t *loc = json_object_get(brk, "location");
    ck_assert_int_eq(json_integer_value(json_object_get(loc, "line")), line);
    ck_assert_str_eq(json_string_value(json_object_get(loc, "function")), "tutorial_crop_plain");
    ck_assert_msg(strstr(json_string_value(json_object_get(loc, "file")), "tutorial_ops.c"),
                  "file");
    ck_assert_int_eq(json_array_size(json_object_get(doc, "graphs")), 2);
    json_decref(doc);
    run_end(&r);

    /* opcheck, failing: the document still comes, and the status is 1. */
    run_begin(&r);
    TT(&r, "opcheck", "--lib", "LIB", "--op", "mylib::crop_nopermute", "--input",
       "f32[3,64,64]", "--input", "i64[4]=0,0,10,10", "--json");
    expect_status(&r, 1);
    doc = run_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "op")), "mylib::crop_nopermute");
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "failed")), 1);
    json_t *fake = json_array_get(json_object_get(doc, "checks"), 2);
    ck_assert_str_eq(json_string_value(json_object_get(fake, "check")), "faketensor");
    ck_assert_str_eq(json_string_value(json_object_get(fake, "result")), "failed");
    ck_assert_msg(strncmp(json_string_value(json_object_get(fake, "message")),
                          "output 0: strides differ: ", 26) == 0, "message");
    ck_assert_msg(strstr(json_string_value(json_object_get(doc, "report")), "FAILED"), "report");
    json_decref(doc);
    run_end(&r);

    /* ops and list. */
    run_begin(&r);
    TT(&r, "ops", "--lib", "LIB", "--json");
    expect_status(&r, 0);
    doc = run_json(&r);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "other")), 4);
    json_t *ops = json_object_get(doc, "ops");
    ck_assert_int_eq(json_array_size(ops),
                     json_integer_value(json_object_get(doc, "builtin")) + 4);
    size_t i;
    json_t *op;
    bool seen = false;
    json_array_foreach(ops, i, op)
    {
        if (!strcmp(json_string_value(json_object_get(op, "name")), "mylib::numpy_sin")) {
            seen = true;
            ck_assert_str_eq(json_string_value(json_object_get(op, "schema")),
                             "mylib::numpy_sin(Tensor input, Tensor(a!) output) -> ()");
            ck_assert(json_is_false(json_object_get(op, "builtin")));
        }
    }
    ck_assert(seen);
    json_decref(doc);
    run_end(&r);

    run_begin(&r);
    TT(&r, "list", "LIB", "--json");
    expect_status(&r, 0);
    doc = run_json(&r);
    json_t *fns = json_object_get(doc, "functions");
    ck_assert_int_eq(json_array_size(fns), 5);
    json_t *mlp = json_array_get(fns, 0);
    ck_assert_str_eq(json_string_value(json_object_get(mlp, "name")), "mlp_forward");
    ck_assert_int_eq(json_integer_value(json_object_get(mlp, "inputs")), 7);
    ck_assert_str_eq(json_string_value(json_object_get(mlp, "input_names")),
                     "x, w1, b1, w2, b2, w3, b3");
    json_decref(doc);
    run_end(&r);

    /* An error is still a message on stderr and an exit status, with
     * nothing on stdout. */
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "crop_plain_pipeline", "--input", "f32[3,64,64]",
       "--fullgraph", "--json");
    expect_status(&r, 1);
    ck_assert_str_eq(r.out, "");
    ck_assert_msg(strncmp(r.err, "tt: Graph break: data read\n", 27) == 0, "%.1500s", r.err);
    run_end(&r);
}
END_TEST

/* Plain numbers where a float or int is expected, and an op name with
 * overloads. */
/* The MLP on a batch of 8: small enough to run in a blink. */
#define MLP_SMALL                                                                        \
    "--input", "f32[8,784]", "--input", "f32[784,512]", "--input", "f32[512]", "--input", \
        "f32[512,256]", "--input", "f32[256]", "--input", "f32[256,10]", "--input", "f32[10]"

/* The row of the profile table whose name is `name` (the name column is
 * 40 wide, then the kind), or NULL. */
static const char *table_row(const char *table, const char *name, const char *kind)
{
    char head[128];
    snprintf(head, sizeof head, "%-40s %-8s ", name, kind);
    for (const char *p = table; (p = strstr(p, head)) != NULL; p++)
        if (p == table || p[-1] == '\n')
            return p;
    return NULL;
}

/* The Calls column of a row. */
static long long row_calls(const char *row)
{
    long long calls = -1;
    ck_assert_int_eq(sscanf(row + 50, "%lld", &calls), 1);
    return calls;
}

START_TEST(test_e2e_profile)
{
    run_result r;
    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", "--fn", "mlp_forward", MLP_SMALL, "--runs", "2",
       "--chrome", "@p.json", "--svg", "@p.svg");
    expect_status(&r, 0);
    ck_assert_str_eq(r.err, "");
    /* One row per op the model calls, each called 3 times per run. */
    const char *row = table_row(r.out, "tt::matmul", "op");
    ck_assert_msg(row, "no tt::matmul row in:\n%.3000s", r.out);
    ck_assert_int_eq(row_calls(row), 6);
    row = table_row(r.out, "tt::add.Tensor", "op");
    ck_assert_msg(row, "no tt::add.Tensor row in:\n%.3000s", r.out);
    ck_assert_int_eq(row_calls(row), 6);
    row = table_row(r.out, "tt::relu", "op");
    ck_assert_msg(row, "no tt::relu row in:\n%.3000s", r.out);
    ck_assert_int_eq(row_calls(row), 4);
    ck_assert_msg(strncmp(r.out, "Name ", 5) == 0, "%.3000s", r.out);
    ck_assert_msg(strstr(r.out, "Peak tensor storage: "), "%.3000s", r.out);
    /* Eager: no compiled call. */
    ck_assert_msg(!strstr(r.out, " compiled "), "%.3000s", r.out);

    /* --chrome: a Chrome trace with an event per op call. */
    char path[160];
    snprintf(path, sizeof path, "%s/p.json", r.dir);
    json_error_t jerr;
    json_t *trace = json_load_file(path, 0, &jerr);
    ck_assert_msg(trace, "%s is not JSON (line %d: %s)", path, jerr.line, jerr.text);
    json_t *events = json_object_get(trace, "traceEvents");
    ck_assert(json_is_array(events));
    size_t i;
    json_t *ev;
    int matmuls = 0;
    json_array_foreach(events, i, ev)
    {
        const char *name = json_string_value(json_object_get(ev, "name"));
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        matmuls += name && ph && !strcmp(name, "tt::matmul") && !strcmp(ph, "X");
    }
    ck_assert_int_eq(matmuls, 6);
    json_decref(trace);

    /* --svg: the timeline, with the ops' names. */
    snprintf(path, sizeof path, "%s/p.svg", r.dir);
    char *svg = tt_test_read_file(path);
    ck_assert_msg(strncmp(svg, "<svg", 4) == 0 || strncmp(svg, "<?xml", 5) == 0, "%.80s", svg);
    ck_assert_msg(strstr(svg, "tt::matmul") && strstr(svg, "</svg>"), "%.200s", svg);
    free(svg);
    run_end(&r);

    /* --rows 1: the op that took the most time, and the peak still. */
    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", "--fn", "mlp_forward", MLP_SMALL, "--rows", "1");
    expect_status(&r, 0);
    ck_assert_msg(table_row(r.out, "tt::matmul", "op") && !table_row(r.out, "tt::relu", "op"),
                  "%.3000s", r.out);
    ck_assert_msg(strstr(r.out, "Peak tensor storage: "), "%.3000s", r.out);
    run_end(&r);

    /* The tutorial's custom op is a row of its own. */
    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", "--fn", "crop_pipeline", "--input", "f32[3,64,64]");
    expect_status(&r, 0);
    ck_assert_msg(table_row(r.out, "mylib::crop", "op") && table_row(r.out, "tt::sin", "op"),
                  "%.3000s", r.out);
    run_end(&r);
}
END_TEST

/* --compile: the warm-up traces and plans, the profiled runs replay. */
START_TEST(test_e2e_profile_compile)
{
    run_result r;
    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", "--fn", "mlp_forward", MLP_SMALL, "--compile", "--runs",
       "3");
    expect_status(&r, 0);
    ck_assert_str_eq(r.err, "");
    const char *row = table_row(r.out, "compiled mlp_forward", "compiled");
    ck_assert_msg(row, "no compiled call row in:\n%.3000s", r.out);
    ck_assert_int_eq(row_calls(row), 3);
    /* Traced in the warm-up: no compile event, and no eager op. */
    ck_assert_msg(!table_row(r.out, "compile mlp_forward", "compile"), "%.3000s", r.out);
    ck_assert_msg(!table_row(r.out, "tt::matmul", "op"), "%.3000s", r.out);
    run_end(&r);

    /* Without a warm-up the first profiled run traces and compiles. */
    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", "--fn", "mlp_forward", MLP_SMALL, "--compile",
       "--warmup", "0", "--rows", "0");
    expect_status(&r, 0);
    ck_assert_msg(table_row(r.out, "compile mlp_forward", "compile"), "no compile row in:\n%.3000s",
                  r.out);
    ck_assert_msg(table_row(r.out, "compiled mlp_forward", "compiled"), "%.3000s", r.out);
    run_end(&r);

    /* A function that breaks the graph runs eagerly under tt_compile. */
    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", "--fn", "crop_plain_pipeline", "--input", "f32[3,64,64]",
       "--compile");
    expect_status(&r, 0);
    ck_assert_msg(strstr(r.out, "tt::sin"), "%.3000s", r.out);
    run_end(&r);
}
END_TEST

static json_t *json_event(json_t *events, const char *name, const char *kind)
{
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev)
    {
        if (!strcmp(json_string_value(json_object_get(ev, "name")), name) &&
            !strcmp(json_string_value(json_object_get(ev, "kind")), kind))
            return ev;
    }
    return NULL;
}

START_TEST(test_e2e_profile_json)
{
    static const char *const fields[] = {"name",       "kind", "thread", "depth",
                                         "start_ns",   "dur_ns", "bytes", "flops",
                                         "live_bytes", "file", "line",   "function", "node"};
    run_result r;
    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", "--fn", "mlp_forward", MLP_SMALL, "--json");
    expect_status(&r, 0);
    ck_assert_str_eq(r.err, "");
    json_t *doc = run_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "command")), "profile");
    ck_assert_str_eq(json_string_value(json_object_get(doc, "function")), "mlp_forward");
    ck_assert(json_is_false(json_object_get(doc, "compiled")));
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "runs")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "warmup")), 1);
    json_t *events = json_object_get(doc, "events");
    /* matmul, add three times, relu twice. */
    ck_assert_int_eq(json_array_size(events), 8);
    size_t i;
    json_t *ev;
    int64_t last_start = 0, max_live = 0;
    json_array_foreach(events, i, ev)
    {
        for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++)
            ck_assert_msg(json_object_get(ev, fields[k]), "event %zu lacks '%s'", i, fields[k]);
        ck_assert_str_eq(json_string_value(json_object_get(ev, "kind")), "op");
        ck_assert_int_eq(json_integer_value(json_object_get(ev, "depth")), 0);
        ck_assert(json_is_null(json_object_get(ev, "node")));
        int64_t start = json_integer_value(json_object_get(ev, "start_ns"));
        ck_assert_int_ge(start, last_start); /* in the order they began */
        last_start = start;
        ck_assert_int_ge(json_integer_value(json_object_get(ev, "dur_ns")), 0);
        ck_assert_int_gt(json_integer_value(json_object_get(ev, "thread")), 0);
        int64_t live = json_integer_value(json_object_get(ev, "live_bytes"));
        ck_assert_int_gt(live, 0);
        max_live = live > max_live ? live : max_live;
    }
    /* The first event is x @ w1, from the model's dense helper. */
    json_t *mm = json_array_get(events, 0);
    ck_assert_str_eq(json_string_value(json_object_get(mm, "name")), "tt::matmul");
    ck_assert_int_eq(json_integer_value(json_object_get(mm, "flops")), 2 * 8 * 784 * 512);
    ck_assert_int_eq(json_integer_value(json_object_get(mm, "bytes")),
                     4 * (8 * 784 + 784 * 512 + 8 * 512));
    ck_assert_int_eq(json_integer_value(json_object_get(mm, "line")),
                     source_line("example_model.c", "\nstatic tt_tensor *dense(", "tt_matmul("));
    ck_assert_str_eq(json_string_value(json_object_get(mm, "function")), "dense");
    const char *file = json_string_value(json_object_get(mm, "file"));
    ck_assert_msg(file && strlen(file) >= 15 &&
                      !strcmp(file + strlen(file) - 15, "example_model.c"), "%s", file);
    /* relu's FLOPs are not counted. */
    ck_assert(json_is_null(json_object_get(json_event(events, "tt::relu", "op"), "flops")));
    /* The peak is the most live memory after an event, and names it. */
    int64_t peak = json_integer_value(json_object_get(doc, "peak_bytes"));
    ck_assert_int_ge(peak, max_live);
    json_t *at = json_object_get(doc, "peak_event");
    if (json_is_integer(at))
        ck_assert_int_eq(json_integer_value(json_object_get(
                             json_array_get(events, (size_t)json_integer_value(at)),
                             "live_bytes")),
                         peak);
    else
        ck_assert(json_is_null(at));
    json_decref(doc);
    run_end(&r);

    /* Compiled: a call event holding the plan's steps, one level down,
     * each naming its graph node. */
    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", "--fn", "mlp_forward", MLP_SMALL, "--json", "--compile",
       "--runs", "2");
    expect_status(&r, 0);
    doc = run_json(&r);
    ck_assert(json_is_true(json_object_get(doc, "compiled")));
    events = json_object_get(doc, "events");
    int calls = 0, steps = 0;
    json_array_foreach(events, i, ev)
    {
        const char *kind = json_string_value(json_object_get(ev, "kind"));
        int depth = (int)json_integer_value(json_object_get(ev, "depth"));
        if (!strcmp(kind, "call")) {
            calls++;
            ck_assert_int_eq(depth, 0);
            ck_assert_str_eq(json_string_value(json_object_get(ev, "name")),
                             "compiled mlp_forward");
            ck_assert(json_is_integer(json_object_get(ev, "planned_bytes")));
        } else {
            ck_assert_msg(!strcmp(kind, "step") || !strcmp(kind, "fused") ||
                              !strcmp(kind, "gemm"),
                          "event %zu is a %s", i, kind);
            ck_assert_int_eq(depth, 1);
            ck_assert_msg(json_is_string(json_object_get(ev, "node")), "event %zu", i);
            steps++;
        }
    }
    ck_assert_int_eq(calls, 2);
    ck_assert_int_gt(steps, 0);
    json_decref(doc);
    run_end(&r);
}
END_TEST

START_TEST(test_e2e_profile_errors)
{
    run_result r;
    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", "--fn", "mlp_forward", MLP_SMALL, "--runs", "0");
    expect_usage_error(&r, "tt: --runs: '0' is not a number of runs (1 to 1000000)");
    run_end(&r);

    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", MLP_SMALL);
    expect_usage_error(&r, "tt: profile: --fn NAME is required (see tt profile --help)");
    run_end(&r);

    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", "--fn", "mlp_forward", "--input", "f32[2,784]");
    expect_usage_error(&r, "tt: --fn mlp_forward takes 7 inputs (x, w1, b1, w2, b2, w3, b3), "
                           "got 1 --input");
    run_end(&r);

    /* A table row without a function is refused, not called. */
    run_begin(&r);
    TT(&r, "profile", "--lib", "ODD", "--fn", "no_pointer", "--input", "f32[2]");
    expect_status(&r, 1);
    ck_assert_msg(count(r.err, "\n") == 1 &&
                      strstr(r.err, "model function 'no_pointer' has no function pointer"),
                  "%.1500s", r.err);
    run_end(&r);

    /* The model's own failure, in the run where it happened: status 1. */
    static const char *const box_error =
        "mylib::crop: argument 'box' (#2) = (0, 0, 10, 10) must lie in the 4x4 image";
    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", "--fn", "crop_pipeline", "--input", "f32[3,4,4]");
    expect_status(&r, 1);
    ck_assert_str_eq(r.out, "");
    ck_assert_msg(strncmp(r.err, "tt: warm-up run 1 of --fn crop_pipeline: ", 41) == 0 &&
                      strstr(r.err, box_error),
                  "%.1500s", r.err);
    run_end(&r);
    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", "--fn", "crop_pipeline", "--input", "f32[3,4,4]",
       "--warmup", "0");
    expect_status(&r, 1);
    ck_assert_str_eq(r.out, "");
    ck_assert_msg(strncmp(r.err, "tt: profiled run 1 of --fn crop_pipeline: ", 42) == 0 &&
                      strstr(r.err, box_error),
                  "%.1500s", r.err);
    run_end(&r);
    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", "--fn", "crop_pipeline", "--input", "f32[3,4,4]",
       "--compile");
    expect_status(&r, 1);
    ck_assert_msg(strncmp(r.err, "tt: warm-up run 1 of --fn crop_pipeline (compiled): ", 52) ==
                          0 && strstr(r.err, "must lie in the 4x4 image"),
                  "%.1500s", r.err);
    run_end(&r);

    /* A file that cannot be written: the table is out, then the reason. */
    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", "--fn", "crop_pipeline", "--input", "f32[3,64,64]",
       "--chrome", "@no/such/dir/p.json");
    expect_status(&r, 1);
    ck_assert_msg(strncmp(r.err, "tt: ", 4) == 0 && strstr(r.err, "no/such/dir/p.json"),
                  "%.1500s", r.err);
    ck_assert_msg(table_row(r.out, "mylib::crop", "op"), "%.1500s", r.out);
    run_end(&r);
    /* TT_PROFILE profiles the whole process already: said so, not a
     * second profile of the thread. */
    run_begin(&r);
    char env[160];
    snprintf(env, sizeof env, "%s/env.json", r.dir);
    setenv("TT_PROFILE", env, 1);
    TT(&r, "profile", "--lib", "LIB", "--fn", "numpy_sin_fn", "--input", "f32[4]");
    unsetenv("TT_PROFILE");
    expect_status(&r, 1);
    ck_assert_msg(strncmp(r.err, "tt: starting the profiler: ", 27) == 0 &&
                      strstr(r.err, "\ntt: TT_PROFILE in the environment profiles the whole "
                                    "process already; unset it for tt profile\n"),
                  "%.1500s", r.err);
    run_end(&r);

    run_begin(&r);
    TT(&r, "profile", "--lib", "LIB", "--fn", "crop_pipeline", "--input", "f32[3,64,64]",
       "--svg", "@no/such/dir/p.svg");
    expect_status(&r, 1);
    ck_assert_msg(strncmp(r.err, "tt: ", 4) == 0 && strstr(r.err, "no/such/dir/p.svg"),
                  "%.1500s", r.err);
    run_end(&r);
}
END_TEST

/* ================================================================= diff */

START_TEST(test_e2e_diff)
{
    run_result r;
    run_begin(&r);
    TT(&r, "diff", "--lib", "LIB", "--fn", "mlp_forward", MLP_SMALL);
    expect_status(&r, 0);
    ck_assert_str_eq(r.out, "compiled matches eager: 1 output within rtol 1e-05, atol 1e-06\n");
    ck_assert_str_eq(r.err, "");
    run_end(&r);
    /* Symbolic sizes, other tolerances and seed: the same finding. */
    run_begin(&r);
    TT(&r, "diff", "--lib", "LIB", "--fn", "mlp_forward", MLP_SMALL, "--symbolic", "--rtol",
       "0.001", "--atol", "0", "--seed", "7");
    expect_status(&r, 0);
    ck_assert_str_eq(r.out, "compiled matches eager: 1 output within rtol 0.001, atol 0\n");
    run_end(&r);

    /* scale_by_calls reads a global each call changes: eager call 1
     * scales by 1, the compiled plan by the count its trace froze (2). No
     * pass is to blame, and the node is its mul. */
    char node[256];
    snprintf(node, sizeof node, "first differing node: mul (tt::mul.Scalar at "
                                "example_model.c:%d in scale_by_calls), largest difference 3",
             source_line("example_model.c", "\ntt_status scale_by_calls(", "tt_mul_scalar("));
    run_begin(&r);
    TT(&r, "diff", "--lib", "LIB", "--fn", "scale_by_calls", "--input", "f32[3]=1,2,3");
    expect_status(&r, 1);
    ck_assert_str_eq(r.err, "");
    ck_assert_msg(count(r.out, "\n") == 3, "%.1500s", r.out);
    ck_assert_msg(has_line(r.out, "compiled differs from eager: output 0, element 0: 2 compiled, "
                                  "1 eagerly (largest difference 3)"), "%.1500s", r.out);
    ck_assert_msg(has_line(r.out, node), "%.1500s", r.out);
    ck_assert_msg(has_line(r.out, "it differs with every pass off too: the traced graph computes "
                                  "another result (a value the trace froze, a fake kernel that "
                                  "disagrees with its kernel)"), "%.1500s", r.out);
    run_end(&r);
    /* A tolerance wide enough lets the difference pass. */
    run_begin(&r);
    TT(&r, "diff", "--lib", "LIB", "--fn", "scale_by_calls", "--input", "f32[3]=1,2,3", "--rtol",
       "1");
    expect_status(&r, 0);
    ck_assert_str_eq(r.out, "compiled matches eager: 1 output within rtol 1, atol 1e-06\n");
    run_end(&r);

    /* The model's own failure: status 1 with its message. */
    run_begin(&r);
    TT(&r, "diff", "--lib", "LIB", "--fn", "crop_pipeline", "--input", "f32[3,4,4]");
    expect_status(&r, 1);
    ck_assert_str_eq(r.out, "");
    ck_assert_msg(strncmp(r.err, "tt: comparing --fn crop_pipeline compiled with eager: ", 54) ==
                          0 &&
                      strstr(r.err, "must lie in the 4x4 image"),
                  "%.1500s", r.err);
    run_end(&r);

    /* Usage errors: one line, status 2. */
    run_begin(&r);
    TT(&r, "diff", "@a.log", "@b.log", "--lib", "LIB");
    expect_usage_error(&r, "tt: diff: --lib does not go with two hash logs: tt diff A.log B.log "
                           "compares logs, tt diff --lib FILE --fn NAME compares a function "
                           "compiled with eager");
    run_end(&r);
    run_begin(&r);
    TT(&r, "diff", "--lib", "LIB", "--input", "f32[3]");
    expect_usage_error(&r, "tt: diff: --fn NAME is required (see tt diff --help)");
    run_end(&r);
    run_begin(&r);
    TT(&r, "diff", "--lib", "LIB", "--fn", "scale_by_calls", "--input", "f32[3]", "--atol", "-1");
    expect_usage_error(&r, "tt: --atol: '-1' is not a tolerance (a number >= 0)");
    run_end(&r);
    run_begin(&r);
    TT(&r, "diff", "--lib", "LIB", "--fn", "scale_by_calls");
    expect_usage_error(&r, "tt: --fn scale_by_calls takes 1 input (x), got 0 --input");
    run_end(&r);
}
END_TEST

START_TEST(test_e2e_diff_json)
{
    run_result r;
    run_begin(&r);
    TT(&r, "diff", "--lib", "LIB", "--fn", "scale_by_calls", "--input", "f32[3]=1,2,3", "--json");
    expect_status(&r, 1);
    ck_assert_str_eq(r.err, "");
    json_t *doc = run_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "command")), "diff");
    ck_assert_str_eq(json_string_value(json_object_get(doc, "function")), "scale_by_calls");
    ck_assert_str_eq(json_string_value(json_object_get(doc, "mode")), "fake");
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "outputs")), 1);
    ck_assert_double_eq(json_real_value(json_object_get(doc, "rtol")), 1e-5);
    ck_assert_double_eq(json_real_value(json_object_get(doc, "atol")), 1e-6);
    ck_assert(json_is_true(json_object_get(doc, "differs")));
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "output")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "element")), 0);
    ck_assert_double_eq(json_real_value(json_object_get(doc, "compiled_value")), 2);
    ck_assert_double_eq(json_real_value(json_object_get(doc, "eager_value")), 1);
    ck_assert_double_eq(json_real_value(json_object_get(doc, "max_abs_diff")), 3);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "what")),
                     "output 0, element 0: 2 compiled, 1 eagerly (largest difference 3)");
    ck_assert_str_eq(json_string_value(json_object_get(doc, "node")), "mul");
    ck_assert_str_eq(json_string_value(json_object_get(doc, "node_op")), "tt::mul.Scalar");
    ck_assert_msg(strncmp(json_string_value(json_object_get(doc, "node_where")),
                          "example_model.c:", 16) == 0,
                  "%s", json_string_value(json_object_get(doc, "node_where")));
    ck_assert_double_eq(json_real_value(json_object_get(doc, "node_max_diff")), 3);
    ck_assert(json_is_null(json_object_get(doc, "pass")));
    ck_assert(json_is_true(json_object_get(doc, "without_passes")));
    ck_assert_int_eq(json_object_size(doc), 19);
    json_decref(doc);
    run_end(&r);

    /* Agreeing: differs false, the rest null. */
    run_begin(&r);
    TT(&r, "diff", "--lib", "LIB", "--fn", "mlp_forward", MLP_SMALL, "--json", "--symbolic");
    expect_status(&r, 0);
    doc = run_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "mode")), "symbolic");
    ck_assert(json_is_false(json_object_get(doc, "differs")));
    static const char *const nulls[] = {"output", "element", "compiled_value", "eager_value",
                                        "max_abs_diff", "what", "node", "node_op", "node_where",
                                        "node_max_diff", "pass"};
    for (size_t k = 0; k < sizeof nulls / sizeof nulls[0]; k++)
        ck_assert_msg(json_is_null(json_object_get(doc, nulls[k])), "%s", nulls[k]);
    ck_assert(json_is_false(json_object_get(doc, "without_passes")));
    json_decref(doc);
    run_end(&r);
}
END_TEST

/* A hash log of `n` lines after the header, each "seq\tkind\top\tnode\t
 * source\tvalue", in the run's scratch folder. */
static void write_log(const run_result *r, const char *name, const char *const *lines, int n)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s", r->dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "# tensortrace hash log 1: seq, kind, op, node, source, then per value its dtype "
               "and sizes and a hash of its elements\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "%s\n", lines[i]);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_e2e_diff_logs)
{
    static const char *const a[] = {
        "0\top\ttt::matmul\t-\tmodel.c:10\tf32[2, 2] 00000000000000aa",
        "1\tstep\ttt::relu\trelu\tmodel.c:11\tf32[2, 2] 00000000000000bb",
    };
    static const char *const b[] = {
        "0\top\ttt::matmul\t-\tmodel.c:10\tf32[2, 2] 00000000000000aa",
        "1\tstep\ttt::relu\trelu\tmodel.c:11\tf32[2, 2] 00000000000000cc",
    };
    run_result r;
    run_begin(&r);
    write_log(&r, "a.log", a, 2);
    write_log(&r, "a2.log", a, 2);
    write_log(&r, "b.log", b, 2);
    write_log(&r, "short.log", a, 1);
    char path[160];
    snprintf(path, sizeof path, "%s/notes.txt", r.dir); /* a file that is no log */
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("some notes\n", f);
    fclose(f);

    TT(&r, "diff", "@a.log", "@a2.log");
    expect_status(&r, 0);
    ck_assert_str_eq(r.out, "the logs agree\n");
    ck_assert_str_eq(r.err, "");
    free(r.out), free(r.err);

    TT(&r, "diff", "@a.log", "@b.log");
    expect_status(&r, 1);
    ck_assert_str_eq(r.err, "");
    char want[1024];
    snprintf(want, sizeof want, "entry 1 is the first divergence: tt::relu, node relu at "
                                "model.c:11 gives f32[2, 2] 00000000000000bb in %s/a.log (line 3) "
                                "and f32[2, 2] 00000000000000cc in %s/b.log (line 3)\n",
             r.dir, r.dir);
    ck_assert_str_eq(r.out, want);
    free(r.out), free(r.err);

    /* One run stops early. */
    TT(&r, "diff", "@short.log", "@a.log");
    expect_status(&r, 1);
    ck_assert_msg(strstr(r.out, "/short.log stops after 1 entry while ") &&
                      count(r.out, "\n") == 1,
                  "%.1500s", r.out);
    free(r.out), free(r.err);

    TT(&r, "diff", "@a.log", "@b.log", "--json");
    expect_status(&r, 1);
    json_t *doc = run_json(&r);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "command")), "diff");
    ck_assert(json_is_false(json_object_get(doc, "agree")));
    ck_assert_msg(strncmp(json_string_value(json_object_get(doc, "divergence")),
                          "entry 1 is the first divergence: ", 33) == 0,
                  "%.1500s", r.out);
    snprintf(want, sizeof want, "%s/a.log", r.dir);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "a")), want);
    json_decref(doc);
    free(r.out), free(r.err);

    TT(&r, "diff", "--json", "@a.log", "@a2.log");
    expect_status(&r, 0);
    doc = run_json(&r);
    ck_assert(json_is_true(json_object_get(doc, "agree")));
    ck_assert(json_is_null(json_object_get(doc, "divergence")));
    json_decref(doc);
    free(r.out), free(r.err);

    /* Not a log, or no file: the library's EINVAL, status 1, on stderr. */
    TT(&r, "diff", "@a.log", "@notes.txt");
    expect_status(&r, 1);
    ck_assert_str_eq(r.out, "");
    snprintf(want, sizeof want, "tt: \"%s/notes.txt\" is not a tensortrace hash log (its first "
                                "line should start \"# tensortrace hash log 1:\")\n", r.dir);
    ck_assert_str_eq(r.err, want);
    free(r.out), free(r.err);
    TT(&r, "diff", "@missing.log", "@a.log");
    expect_status(&r, 1);
    ck_assert_str_eq(r.out, "");
    snprintf(want, sizeof want, "tt: cannot read \"%s/missing.log\": No such file or directory\n",
             r.dir);
    ck_assert_str_eq(r.err, want);
    run_end(&r);

    /* Logs made for real: TT_HASH_LOG on two runs of tt profile (eager ops,
     * the random inputs among them). The same seed agrees; another seed
     * diverges at the first random input. */
    run_begin(&r);
    char env[160];
    const char *seeds[3] = {"0", "0", "1"}, *names[3] = {"s0.log", "s0b.log", "s1.log"};
    for (int k = 0; k < 3; k++) {
        snprintf(env, sizeof env, "%s/%s", r.dir, names[k]);
        setenv("TT_HASH_LOG", env, 1);
        TT(&r, "profile", "--lib", "LIB", "--fn", "mlp_forward", MLP_SMALL, "--seed", seeds[k]);
        unsetenv("TT_HASH_LOG");
        expect_status(&r, 0);
        free(r.out), free(r.err);
    }
    TT(&r, "diff", "@s0.log", "@s0b.log");
    expect_status(&r, 0);
    ck_assert_str_eq(r.out, "the logs agree\n");
    free(r.out), free(r.err);
    TT(&r, "diff", "@s0.log", "@s1.log");
    expect_status(&r, 1);
    ck_assert_msg(strncmp(r.out, "entry 0 is the first divergence: tt::randn at ", 46) == 0,
                  "%.1500s", r.out);
    run_end(&r);
}
END_TEST

START_TEST(test_e2e_numbers_overloads)
{
    run_result r;
    run_begin(&r);
    TT(&r, "opcheck", "--op", "tt::mul.Scalar", "--input", "f64[2,3]:requires_grad", "--input",
       "0.5");
    expect_status(&r, 0);
    ck_assert_msg(strstr(r.out, "opcheck tt::mul.Scalar: 4 passed, 0 failed"), "%.1500s", r.out);
    run_end(&r);

    run_begin(&r);
    TT(&r, "opcheck", "--op", "tt::add.Tensor", "--input", "f64[3]", "--input", "f64[3]",
       "--input", "2");
    expect_status(&r, 0);
    ck_assert_msg(strstr(r.out, "0 failed"), "%.1500s", r.out);
    run_end(&r);

    /* A plain number is a 0-dim spec, so the usual message for a wrong one. */
    run_begin(&r);
    TT(&r, "opcheck", "--lib", "LIB", "--op", "mylib::crop", "--input", "f32[3,8,8]", "--input",
       "4");
    expect_usage_error(&r, "tt: mylib::crop: argument 'box' (#2) is int[4]: give it as "
                           "i64[4]=... (a 1-dim integer spec with values), not '4'");
    run_end(&r);

    run_begin(&r);
    TT(&r, "opcheck", "--op", "tt::add");
    expect_usage_error(&r, "tt: --op: 'tt::add' has overloads, name one: tt::add.Scalar, "
                           "tt::add.Tensor");
    run_end(&r);

    run_begin(&r);
    TT(&r, "opcheck", "--op", "tt::ad");
    expect_usage_error(&r, "tt: --op: unknown op 'tt::ad' (tt ops lists the registered ops)");
    run_end(&r);
}
END_TEST

/* A .npy file: magic, version 1.0, header length; the header a dict
 * padded to 64 bytes; then the data. Returns the data's offset. */
static size_t npy_header(const char *path, char *dict, size_t n, long *size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "no %s", path);
    unsigned char pre[10];
    ck_assert_int_eq(fread(pre, 1, 10, f), 10);
    ck_assert_msg(memcmp(pre, "\x93NUMPY\x01\x00", 8) == 0, "magic and version");
    size_t hlen = pre[8] | (size_t)pre[9] << 8;
    ck_assert_msg((10 + hlen) % 64 == 0, "header padded to 64 bytes: %zu", hlen);
    ck_assert_uint_lt(hlen, n);
    ck_assert_int_eq(fread(dict, 1, hlen, f), hlen);
    dict[hlen] = '\0';
    ck_assert_msg(dict[hlen - 1] == '\n', "the header ends with a newline");
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    fclose(f);
    return 10 + hlen;
}

START_TEST(test_e2e_save)
{
    run_result r;
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "numpy_sin_fn", "--mode", "real", "--input",
       "f32[2,2]=0,1.5707963267948966,-1.5707963267948966,0", "--save", "@out", "--print");
    expect_status(&r, 0);
    ck_assert_str_eq(r.err, "");
    ck_assert_msg(strstr(r.out, "out0 = tensor(f32[2, 2], [0, 1, -1, 0])"), "%.1500s", r.out);
    char path[160], dict[256];
    snprintf(path, sizeof path, "%s/out/out0.npy", r.dir);
    long size;
    size_t off = npy_header(path, dict, sizeof dict, &size);
    ck_assert_msg(!strncmp(dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
                           59), "%s", dict);
    ck_assert_int_eq(size, (long)off + 4 * 4);
    FILE *f = fopen(path, "rb");
    float v[4];
    fseek(f, (long)off, SEEK_SET);
    ck_assert_int_eq(fread(v, sizeof v[0], 4, f), 4);
    fclose(f);
    ck_assert(v[0] == 0 && v[1] == 1 && v[2] == -1 && v[3] == 0);
    run_end(&r);

    /* Every output, with its own dtype and shape; a 1-dim shape is "(n,)". */
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "crop_pipeline", "--mode", "real", "--input",
       "f64[3,12,12]", "--save", "@o", "--json");
    expect_status(&r, 0);
    json_t *doc = run_json(&r);
    snprintf(path, sizeof path, "%s/o/out0.npy", r.dir);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(doc, "saved"), 0)), path);
    json_decref(doc);
    off = npy_header(path, dict, sizeof dict, &size);
    ck_assert_msg(strstr(dict, "'descr': '<f8'") && strstr(dict, "'shape': (3, 10, 10)"), "%s",
                  dict);
    ck_assert_int_eq(size, (long)off + 300 * 8);
    run_end(&r);

    /* A folder that cannot be made: status 1, the reason. */
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "numpy_sin_fn", "--mode", "real", "--input",
       "f32[2]", "--save", "@no/such/dir");
    expect_status(&r, 1);
    ck_assert_msg(strstr(r.err, "tt: --save: cannot make the folder '") &&
                      strstr(r.err, "no/such/dir': No such file or directory"),
                  "%.1500s", r.err);
    run_end(&r);

    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "numpy_sin_fn", "--input", "f32[2]", "--save", "x");
    expect_usage_error(&r, "tt: trace: --save needs --mode real (a fake trace computes no "
                           "values)");
    run_end(&r);
}
END_TEST

/* A model library with a bad row: refused with a message, never called. */
START_TEST(test_e2e_odd_library)
{
    run_result r;
    char want[512];
    run_begin(&r);
    TT(&r, "trace", "--lib", "ODD", "--fn", "no_pointer", "--input", "f32[2]");
    expect_status(&r, 1);
    ck_assert_str_eq(r.out, "");
    snprintf(want, sizeof want, "tt: %s: model function 'no_pointer' has no function pointer "
                                "in tt_model_fns\n", env_path("TT_ODD_LIB"));
    ck_assert_str_eq(r.err, want);
    run_end(&r);

    /* Its other row works; noutputs 0 means 1; no input names: in0... */
    run_begin(&r);
    TT(&r, "trace", "--lib", "ODD", "--fn", "identity", "--input", "f32[2]");
    expect_status(&r, 0);
    ck_assert_msg(strstr(r.out, "clone: \"f32[2]\" = tt::clone(in0)"), "%.1500s", r.out);
    run_end(&r);

    run_begin(&r);
    TT(&r, "list", "ODD");
    expect_status(&r, 0);
    ck_assert(has_line(r.out, "no_pointer(x) -> 1 output"));
    ck_assert(has_line(r.out, "identity(in0) -> 1 output"));
    ck_assert(has_line(r.out, "    out = clone(x); noutputs 0 means 1"));
    run_end(&r);

    /* --save where a file is in the way. */
    run_begin(&r);
    char path[160];
    snprintf(path, sizeof path, "%s/blocker", r.dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    TT(&r, "trace", "--lib", "ODD", "--fn", "identity", "--mode", "real", "--input", "f32[2]",
       "--save", "@blocker");
    expect_status(&r, 1);
    snprintf(want, sizeof want, "tt: --save: cannot make the folder '%s': a file of that name "
                                "is in the way\n", path);
    ck_assert_str_eq(r.err, want);
    run_end(&r);
}
END_TEST

START_TEST(test_e2e_usage_errors)
{
    run_result r;
    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "mlp_forward", "--input", "f32[3,x]");
    expect_usage_error(&r, "tt: bad --input 'f32[3,x]': 'x' is not a size");
    run_end(&r);

    run_begin(&r);
    TT(&r, "trace", "--lib", "@libnothere.so", "--fn", "mlp_forward");
    expect_status(&r, 2);
    ck_assert_msg(strncmp(r.err, "tt: cannot load --lib '", 23) == 0 &&
                      strstr(r.err, "libnothere.so: cannot open shared object file") &&
                      count(r.err, "\n") == 1,
                  "%.1500s", r.err);
    run_end(&r);

    /* --fn names only what the model table declares: not a missing
     * symbol, nor one that exists but is no model function (called through
     * the traced-function signature, tt_model_init would crash). */
    static const char *const not_models[] = {"no_such_fn", "tt_model_init", "tt_model_fns",
                                             "check_arity"};
    char want[512];
    for (int i = 0; i < 4; i++) {
        run_begin(&r);
        TT(&r, "trace", "--lib", "LIB", "--fn", not_models[i], "--input", "f32[2]");
        snprintf(want, sizeof want, "tt: --fn: %s declares no model function '%s' (it has: "
                                    "mlp_forward, crop_pipeline, crop_plain_pipeline, "
                                    "numpy_sin_fn, scale_by_calls)",
                 env_path("TT_EXAMPLE_LIB"), not_models[i]);
        expect_usage_error(&r, want);
        run_end(&r);
    }

    /* A library without a model table: tt cannot know its model functions. */
    run_begin(&r);
    TT(&r, "explain", "--lib", "libm.so.6", "--fn", "cos", "--input", "f32[2]");
    expect_usage_error(&r, "tt: libm.so.6 declares no model functions: it exports no table "
                           "'tt_model_fns' (see <tt_model.h>)");
    run_end(&r);
    run_begin(&r);
    TT(&r, "list", "libm.so.6");
    expect_usage_error(&r, "tt: libm.so.6 declares no model functions: it exports no table "
                           "'tt_model_fns' (see <tt_model.h>)");
    run_end(&r);

    run_begin(&r);
    TT(&r, "list");
    expect_usage_error(&r, "tt: list: --lib FILE is required (see tt list --help)");
    run_end(&r);

    run_begin(&r);
    TT(&r, "list", "LIB", "extra");
    expect_usage_error(&r, "tt: list: unexpected argument 'extra' (options start with --; see "
                           "tt list --help)");
    run_end(&r);

    run_begin(&r);
    TT(&r, "explain", "--lib", "LIB", "--fn", "mlp_forward", "--init", "no_such_init");
    snprintf(want, sizeof want, "tt: --init: %s exports no function 'no_such_init'",
             env_path("TT_EXAMPLE_LIB"));
    expect_usage_error(&r, want);
    run_end(&r);

    run_begin(&r);
    TT(&r, "opcheck", "--lib", "LIB", "--op", "mylib::nope", "--input", "f32[2]");
    expect_usage_error(&r, "tt: --op: unknown op 'mylib::nope' (tt ops --lib ... lists the "
                           "registered ops)");
    run_end(&r);

    /* Without the library its ops are unknown. */
    run_begin(&r);
    TT(&r, "opcheck", "--op", "mylib::crop");
    expect_usage_error(&r, "tt: --op: unknown op 'mylib::crop' (tt ops lists the registered "
                           "ops)");
    run_end(&r);

    run_begin(&r);
    TT(&r, "opcheck", "--lib", "LIB", "--op", "mylib::crop", "--input", "f32[3,64,64]",
       "--input", "i64[3]=0,0,10");
    expect_usage_error(&r, "tt: mylib::crop: argument 'box' (#2) is int[4]: give it as "
                           "i64[4]=... (a 1-dim integer spec with values), not "
                           "'i64[3]=0,0,10'");
    run_end(&r);

    run_begin(&r);
    TT(&r, "trace", "--lib", "LIB", "--fn", "mlp_forward", "--frobnicate");
    expect_usage_error(&r, "tt: trace: unknown option '--frobnicate' (see tt trace --help)");
    run_end(&r);

    run_begin(&r);
    TT(&r, "trace", "--fn", "mlp_forward");
    expect_usage_error(&r, "tt: trace: --lib FILE is required (see tt trace --help)");
    run_end(&r);

    run_begin(&r);
    TT(&r, "bogus");
    expect_usage_error(&r, "tt: unknown command 'bogus' (trace, explain, profile, diff, opcheck, "
                           "ops, list; see tt --help)");
    run_end(&r);
}
END_TEST

START_TEST(test_e2e_help_version)
{
    run_result r;
    run_begin(&r);
    TT(&r, "--help");
    expect_status(&r, 0);
    ck_assert_msg(strncmp(r.out, "Usage: tt COMMAND", 17) == 0, "%.1500s", r.out);
    ck_assert_str_eq(r.err, "");
    run_end(&r);

    run_begin(&r);
    TT(&r, "opcheck", "--help");
    expect_status(&r, 0);
    char *h = tt_cli_help(TT_CLI_OPCHECK);
    ck_assert_str_eq(r.out, h);
    free(h);
    run_end(&r);

    run_begin(&r);
    TT(&r, "--version");
    expect_status(&r, 0);
    /* The version, then which kernels run the matrix products and the
     * convolutions (oneDNN and its version). */
    ck_assert_msg(strncmp(r.out, "tt (tensortrace) ", 17) == 0 && count(r.out, "\n") == 3, "%s",
                  r.out);
    char want[300];
    snprintf(want, sizeof want, "\nmatrix products: %s\n", tt_blas_kernels());
    ck_assert_msg(strstr(r.out, want) != NULL, "%s", r.out);
    snprintf(want, sizeof want, "\nconvolutions: %s\n", tt_onednn_version());
    ck_assert_msg(strstr(r.out, want) != NULL && strstr(want, "oneDNN 2."), "%s", r.out);
    run_end(&r);

    /* --help-all (what the man page is made from): tt's help, then each
     * command's under "tt COMMAND:". */
    run_begin(&r);
    TT(&r, "--help-all");
    expect_status(&r, 0);
    ck_assert_msg(strncmp(r.out, "Usage: tt COMMAND", 17) == 0, "%.200s", r.out);
    const char *names[] = {"trace", "explain", "profile", "diff", "opcheck", "ops", "list"};
    for (int i = 0; i < 7; i++) {
        char head[64];
        snprintf(head, sizeof head, "\ntt %s:\n\nUsage: tt %s", names[i], names[i]);
        ck_assert_msg(strstr(r.out, head), "no '%s' in --help-all", head + 1);
    }
    run_end(&r);
}
END_TEST

static Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tt_tcase("specs");
    tcase_add_test(tc, test_spec_valid);
    tcase_add_test(tc, test_spec_values);
    tcase_add_test(tc, test_spec_errors);
    tcase_add_test(tc, test_spec_tensor_fake);
    tcase_add_test(tc, test_spec_tensor_real);
    suite_add_tcase(s, tc);
    tc = tt_tcase("options");
    tcase_add_test(tc, test_parse_trace);
    tcase_add_test(tc, test_parse_opcheck_ops);
    tcase_add_test(tc, test_parse_profile);
    tcase_add_test(tc, test_parse_diff);
    tcase_add_test(tc, test_parse_help_version);
    tcase_add_test(tc, test_parse_errors);
    tcase_add_test(tc, test_parse_too_many_inputs);
    tcase_add_test(tc, test_help);
    tcase_add_test(tc, test_help_matches_parser);
    suite_add_tcase(s, tc);
    tc = tt_tcase("opcheck_args");
    tcase_add_test(tc, test_opcheck_args);
    tcase_add_test(tc, test_opcheck_args_errors);
    suite_add_tcase(s, tc);
    tc = tt_tcase("binary");
    tcase_add_test(tc, test_e2e_trace_mlp);
    tcase_add_test(tc, test_e2e_pictures);
    tcase_add_test(tc, test_e2e_explain);
    tcase_add_test(tc, test_e2e_fullgraph_break);
    tcase_add_test(tc, test_e2e_opcheck);
    tcase_add_test(tc, test_e2e_ops);
    tcase_add_test(tc, test_e2e_list);
    tcase_add_test(tc, test_e2e_json);
    tcase_add_test(tc, test_e2e_profile);
    tcase_add_test(tc, test_e2e_profile_compile);
    tcase_add_test(tc, test_e2e_profile_json);
    tcase_add_test(tc, test_e2e_profile_errors);
    tcase_add_test(tc, test_e2e_diff);
    tcase_add_test(tc, test_e2e_diff_json);
    tcase_add_test(tc, test_e2e_diff_logs);
    tcase_add_test(tc, test_e2e_numbers_overloads);
    tcase_add_test(tc, test_e2e_save);
    tcase_add_test(tc, test_e2e_odd_library);
    tcase_add_test(tc, test_e2e_usage_errors);
    tcase_add_test(tc, test_e2e_help_version);
    suite_add_tcase(s, tc);
    return s;
}

TT_TEST_MAIN(cli_suite)
