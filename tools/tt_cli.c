/* The parsing half of `tt`: input specs, the command line from one option
 * table (which also writes the help), and opcheck arguments from specs.
 * See tt_cli.h. */
#include "tt_cli.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Fake tensors make "a model far larger than RAM" traceable, so sizes are
 * only bounded so that numel * 8 bytes fits an int64. */
#define MAX_NUMEL ((int64_t)1 << 60)

static void say(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *err, size_t n, const char *fmt, ...)
{
    if (!err || n == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------ input specs */

static const char dtype_list[] = "f32, f64, i64, i32, u8, bool";

/* Only the short names: `tt_dtype_from_name` also takes PyTorch's long
 * ones, but the spec language is meant to be one way of writing a type. */
static int dtype_of(const char *s, size_t len)
{
    for (int d = 0; d < TT_DTYPE_COUNT; d++) {
        const char *name = tt_dtype_name((tt_dtype)d);
        if (strlen(name) == len && memcmp(name, s, len) == 0)
            return d;
    }
    return -1;
}

/* A copy of s[0..len) with surrounding blanks removed, for messages and
 * number parsing. */
static void token(const char *s, size_t len, char *out, size_t n)
{
    while (len > 0 && (*s == ' ' || *s == '\t'))
        s++, len--;
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    if (len >= n)
        len = n - 1;
    memcpy(out, s, len);
    out[len] = '\0';
}

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* Parses "3,64,64" (or "" for 0-dim) into spec's sizes. */
static int parse_sizes(const char *s, size_t len, tt_cli_spec *spec, char *why, size_t n)
{
    char tok[64];
    token(s, len, tok, sizeof tok);
    spec->ndim = 0;
    spec->numel = 1;
    if (!tok[0])
        return 0; /* f32[]: a 0-dim tensor */
    const char *p = s, *end = s + len;
    while (p <= end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        token(p, (size_t)(stop - p), tok, sizeof tok);
        if (!tok[0]) {
            say(why, n, "a size is missing in '[%.*s]'", (int)len, s);
            return -1;
        }
        if (!all_digits(tok)) {
            say(why, n, "'%s' is not a size", tok);
            return -1;
        }
        errno = 0;
        unsigned long long v = strtoull(tok, NULL, 10);
        if (errno == ERANGE || v >= (unsigned long long)MAX_NUMEL) {
            say(why, n, "size %s is too large", tok);
            return -1;
        }
        if (spec->ndim == TT_MAX_DIMS) {
            say(why, n, "more than %d sizes (a tensor has at most %d dims)", TT_MAX_DIMS,
                TT_MAX_DIMS);
            return -1;
        }
        spec->sizes[spec->ndim++] = (int64_t)v;
        if (v != 0 && spec->numel > (MAX_NUMEL - 1) / (int64_t)v) {
            say(why, n, "the sizes make 2^60 elements or more");
            return -1;
        }
        spec->numel *= (int64_t)v;
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}

/* Stores value token `tok` as element i of spec->values. */
static int parse_value(const char *tok, tt_cli_spec *spec, int64_t i, char *why, size_t n)
{
    char *rest = NULL;
    tt_dtype dt = spec->dtype;
    if (!tok[0]) {
        say(why, n, "value %" PRId64 " is empty", i + 1);
        return -1;
    }
    if (dt == TT_F32 || dt == TT_F64) {
        errno = 0;
        double d = strtod(tok, &rest);
        if (*rest) {
            say(why, n, "'%s' is not a number", tok);
            return -1;
        }
        if (dt == TT_F32)
            ((float *)spec->values)[i] = (float)d;
        else
            ((double *)spec->values)[i] = d;
        return 0;
    }
    if (dt == TT_BOOL) {
        bool b;
        if (!strcmp(tok, "1") || !strcmp(tok, "true"))
            b = true;
        else if (!strcmp(tok, "0") || !strcmp(tok, "false"))
            b = false;
        else {
            say(why, n, "'%s' is not a bool (0, 1, true, false)", tok);
            return -1;
        }
        ((bool *)spec->values)[i] = b;
        return 0;
    }
    errno = 0;
    long long v = strtoll(tok, &rest, 10);
    if (*rest || rest == tok) {
        say(why, n, "'%s' is not an integer", tok);
        return -1;
    }
    long long lo = dt == TT_U8 ? 0 : dt == TT_I32 ? INT32_MIN : INT64_MIN;
    long long hi = dt == TT_U8 ? UINT8_MAX : dt == TT_I32 ? INT32_MAX : INT64_MAX;
    if (errno == ERANGE || v < lo || v > hi) {
        say(why, n, "'%s' is out of range for %s", tok, tt_dtype_name(dt));
        return -1;
    }
    if (dt == TT_U8)
        ((uint8_t *)spec->values)[i] = (uint8_t)v;
    else if (dt == TT_I32)
        ((int32_t *)spec->values)[i] = (int32_t)v;
    else
        ((int64_t *)spec->values)[i] = (int64_t)v;
    return 0;
}

/* Parses "0,0,10,10" (numel values) into a new spec->values. */
static int parse_values(const char *s, size_t len, tt_cli_spec *spec, char *why, size_t n)
{
    char all[32];
    token(s, len, all, sizeof all);
    int64_t count = 0;
    if (all[0]) {
        count = 1;
        for (size_t k = 0; k < len; k++)
            count += s[k] == ',';
    }
    if (count != spec->numel) {
        if (spec->ndim == 0)
            say(why, n, "a 0-dim tensor takes 1 value, got %" PRId64, count);
        else
            say(why, n, "%" PRId64 " value%s for %" PRId64 " element%s", count,
                count == 1 ? "" : "s", spec->numel, spec->numel == 1 ? "" : "s");
        return -1;
    }
    spec->values = calloc((size_t)(count ? count : 1), tt_dtype_size(spec->dtype));
    if (!spec->values) {
        say(why, n, "out of memory for %" PRId64 " values", count);
        return -1;
    }
    spec->has_values = true;
    const char *p = s, *end = s + len;
    for (int64_t i = 0; i < count; i++) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        char tok[128];
        if ((size_t)(stop - p) >= sizeof tok) {
            say(why, n, "value %" PRId64 " is too long", i + 1);
            return -1;
        }
        token(p, (size_t)(stop - p), tok, sizeof tok);
        if (parse_value(tok, spec, i, why, n))
            return -1;
        p = stop + 1;
    }
    return 0;
}

static int parse_flag(const char *s, size_t len, tt_cli_spec *spec, char *why, size_t n)
{
    char tok[64];
    token(s, len, tok, sizeof tok);
    if (strcmp(tok, "requires_grad") != 0) {
        say(why, n, "'%s' is not a flag (the one flag is requires_grad)", tok);
        return -1;
    }
    if (spec->requires_grad) {
        say(why, n, "requires_grad is given twice");
        return -1;
    }
    /* As PyTorch: "only Tensors of floating point dtype can require
     * gradients". */
    if (!tt_dtype_is_float(spec->dtype)) {
        say(why, n, "requires_grad needs a floating-point dtype, not %s",
            tt_dtype_name(spec->dtype));
        return -1;
    }
    spec->requires_grad = true;
    return 0;
}

/* DTYPE[SIZES] then any of ":requires_grad" and "=VALUES" (values run to
 * the next ':' or the end). */
static int parse_spec(const char *text, tt_cli_spec *spec, char *why, size_t n)
{
    if (!*text) {
        say(why, n, "the spec is empty (write e.g. f32[2,3])");
        return -1;
    }
    const char *open = strchr(text, '[');
    size_t dlen = open ? (size_t)(open - text) : strcspn(text, ":=");
    int dt = dtype_of(text, dlen);
    if (dt < 0) {
        char tok[64];
        token(text, dlen, tok, sizeof tok);
        if (tok[0])
            say(why, n, "'%s' is not a dtype (%s)", tok, dtype_list);
        else
            say(why, n, "the dtype is missing (%s)", dtype_list);
        return -1;
    }
    spec->dtype = (tt_dtype)dt;
    if (!open) {
        say(why, n, "the sizes are missing: write %s[SIZES] (%s[] is 0-dim)",
            tt_dtype_name(spec->dtype), tt_dtype_name(spec->dtype));
        return -1;
    }
    const char *close = strchr(open, ']');
    if (!close) {
        say(why, n, "']' is missing");
        return -1;
    }
    if (memchr(open + 1, '[', (size_t)(close - open - 1))) {
        say(why, n, "'[' inside the sizes");
        return -1;
    }
    if (parse_sizes(open + 1, (size_t)(close - open - 1), spec, why, n))
        return -1;
    const char *p = close + 1;
    while (*p) {
        if (*p == ':') {
            size_t len = strcspn(p + 1, ":=");
            if (parse_flag(p + 1, len, spec, why, n))
                return -1;
            p += 1 + len;
        } else if (*p == '=') {
            if (spec->has_values) {
                say(why, n, "values are given twice");
                return -1;
            }
            size_t len = strcspn(p + 1, ":");
            if (parse_values(p + 1, len, spec, why, n))
                return -1;
            p += 1 + len;
        } else {
            say(why, n, "unexpected '%s' after ']' (expected :requires_grad or =VALUES)", p);
            return -1;
        }
    }
    return 0;
}

/* A plain number, "3" or "-0.5": a 0-dim i64 (an integer) or f64 spec
 * holding it. Returns false (spec untouched) for anything else. */
static bool plain_number(const char *text, tt_cli_spec *spec)
{
    char *end = NULL;
    if (!strchr("0123456789+-.", text[0]) || !text[0])
        return false;
    errno = 0;
    long long i = strtoll(text, &end, 10);
    if (!*end && end != text && errno != ERANGE) {
        spec->dtype = TT_I64;
        spec->values = malloc(sizeof(int64_t));
        if (spec->values)
            *(int64_t *)spec->values = i;
    } else {
        double d = strtod(text, &end);
        if (*end || end == text)
            return false;
        spec->dtype = TT_F64;
        spec->values = malloc(sizeof(double));
        if (spec->values)
            *(double *)spec->values = d;
    }
    spec->numel = 1;
    spec->has_values = spec->values != NULL;
    return spec->has_values;
}

int tt_cli_spec_parse(const char *text, tt_cli_spec *spec, char *err, size_t n)
{
    memset(spec, 0, sizeof *spec);
    if (!text)
        text = "";
    char why[256];
    if (plain_number(text, spec)) {
        spec->text = text;
        return 0;
    }
    if (parse_spec(text, spec, why, sizeof why)) {
        tt_cli_spec_clear(spec);
        say(err, n, "bad --input '%s': %s", text, why);
        return -1;
    }
    spec->text = text;
    return 0;
}

void tt_cli_spec_clear(tt_cli_spec *spec)
{
    if (!spec)
        return;
    free(spec->values);
    memset(spec, 0, sizeof *spec);
}

/* Random values of an integer or bool dtype: small non-negative integers
 * (usable as indices into most tensors) from the seeded generator. */
static tt_tensor *random_ints(const tt_cli_spec *spec)
{
    tt_tensor *u = tt_rand(spec->ndim, spec->sizes, TT_F64);
    size_t es = tt_dtype_size(spec->dtype);
    double *d = malloc(sizeof *d * (size_t)(spec->numel ? spec->numel : 1));
    char *buf = malloc(es * (size_t)(spec->numel ? spec->numel : 1));
    tt_tensor *t = NULL;
    if (!d || !buf) {
        tt_error(TT_ENOMEM, "tt: out of memory for the values of '%s'", spec->text);
        goto out;
    }
    if (!u || tt_to_buffer(u, d, sizeof *d * (size_t)spec->numel))
        goto out;
    for (int64_t i = 0; i < spec->numel; i++) {
        int64_t v = spec->dtype == TT_BOOL ? d[i] < 0.5 : (int64_t)(d[i] * 10);
        switch (spec->dtype) {
        case TT_I64: ((int64_t *)buf)[i] = v; break;
        case TT_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
        case TT_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
        default: ((bool *)buf)[i] = v != 0; break;
        }
    }
    t = tt_from_data(spec->ndim, spec->sizes, spec->dtype, buf);
out:
    free(buf);
    free(d);
    tt_release(u);
    return t;
}

tt_tensor *tt_cli_spec_tensor(const tt_cli_spec *spec, bool fake)
{
    tt_tensor *t;
    if (spec->has_values) {
        t = tt_from_data(spec->ndim, spec->sizes, spec->dtype, spec->values);
    } else if (fake) {
        tt_size sizes[TT_MAX_DIMS];
        for (int d = 0; d < spec->ndim; d++)
            sizes[d] = spec->sizes[d];
        t = tt_fake_empty(spec->ndim, sizes, spec->dtype);
    } else if (tt_dtype_is_float(spec->dtype)) {
        t = tt_randn(spec->ndim, spec->sizes, spec->dtype);
    } else {
        t = random_ints(spec);
    }
    if (t && spec->requires_grad && tt_set_requires_grad(t, true))
        t = tt_release(t);
    return t;
}

/* ----------------------------------------------------------- command line */

enum { O_HELP, O_LIB, O_INIT, O_FN, O_OP, O_INPUT, O_MODE, O_FULLGRAPH, O_NOUT, O_SEED,
       O_CHECK, O_DOT, O_SVG, O_PNG, O_JSON, O_SAVE, O_PRINT, O_COMPILE, O_RUNS, O_WARMUP,
       O_ROWS, O_CHROME, O_SYMBOLIC, O_RTOL, O_ATOL };

#define C_TRACE TT_CLI_TRACE
#define C_EXPLAIN TT_CLI_EXPLAIN
#define C_PROFILE TT_CLI_PROFILE
#define C_TE (TT_CLI_TRACE | TT_CLI_EXPLAIN)
#define C_DIFF TT_CLI_DIFF
#define C_TEP (C_TE | C_PROFILE) /* the commands that run a model function */
#define C_REAL (C_PROFILE | C_DIFF) /* ... on real inputs */
#define C_ALL (C_TEP | C_DIFF | TT_CLI_OPCHECK | TT_CLI_OPS | TT_CLI_LIST)

/* One row per option and meaning: an option whose help differs between
 * commands has a row per group of commands. The parser takes the first
 * row that matches the name and the command; the help prints the rows of
 * a command in this order. */
static const struct cli_opt {
    int id;
    const char *name;    /* "--lib" */
    const char *metavar; /* NULL: a flag */
    unsigned cmds;       /* tt_cli_cmd bits */
    unsigned required;   /* the commands that need it */
    const char *help;
} options[] = {
    {O_LIB, "--lib", "FILE", C_TEP, C_TEP,
     "the model library (a shared object) to load with dlopen; a file name that exists "
     "is loaded from there, then one installed with tt (libttexample.so, the example), "
     "any other name is searched as dlopen searches (LD_LIBRARY_PATH...)"},
    {O_LIB, "--lib", "FILE", TT_CLI_OPCHECK | TT_CLI_OPS, 0,
     "a library whose init function registers custom ops (optional: built-in ops need none)"},
    {O_LIB, "--lib", "FILE", C_DIFF, 0,
     "the model library whose function to compare, found as tt profile finds it "
     "(required unless two hash logs are given)"},
    {O_LIB, "--lib", "FILE", TT_CLI_LIST, TT_CLI_LIST,
     "the model library whose table of model functions to print (it may also be given "
     "alone: tt list FILE)"},
    {O_INIT, "--init", "NAME", C_ALL, 0,
     "the library's init function, tt_status NAME(void), called once after loading; "
     "default: tt_model_init, when the library exports it"},
    {O_FN, "--fn", "NAME", C_TE, C_TE,
     "the model function to trace, one the library's table tt_model_fns declares (tt "
     "list FILE prints them); it is called with the traced-function signature"},
    {O_FN, "--fn", "NAME", C_PROFILE, C_PROFILE,
     "the model function to run and profile, one the library's table tt_model_fns "
     "declares (tt list FILE prints them)"},
    {O_FN, "--fn", "NAME", C_DIFF, 0,
     "the model function to run eagerly and compiled, one the library's table "
     "tt_model_fns declares (required with --lib)"},
    {O_OP, "--op", "NAME", TT_CLI_OPCHECK, TT_CLI_OPCHECK,
     "the op to check, \"ns::name\" or \"ns::name.overload\" (tt ops lists them)"},
    {O_INPUT, "--input", "SPEC", C_TE, 0,
     "one input of the function, in order (repeat for each; see \"Input specs\"). In "
     "fake and symbolic modes an input without values is a fake tensor (no memory); in "
     "real mode and for explain it gets random values from --seed"},
    {O_INPUT, "--input", "SPEC", C_REAL, 0,
     "one input of the function, in order (repeat for each; see \"Input specs\"): a real "
     "tensor holding the spec's values, or random ones from --seed"},
    {O_INPUT, "--input", "SPEC", TT_CLI_OPCHECK, 0,
     "one argument of the op, in schema order (repeat for each; trailing arguments with "
     "defaults may be left out). A Tensor argument gets the spec's values, or random "
     "ones from --seed; an int[N]/int[] argument takes a 1-dim integer spec with values "
     "(i64[4]=0,0,10,10) and gets them as an int list (float[]: a number spec, "
     "f64[2]=0.5,1); an int, float, bool or Scalar "
     "argument takes a 0-dim spec with a value (i64[]=3, f64[]=0.5)"},
    {O_MODE, "--mode", "MODE", C_TRACE, 0,
     "fake (default: fake tensors, nothing is computed), symbolic (fake, with the input "
     "sizes as symbols s0, s1...) or real (computes while it records)"},
    {O_FULLGRAPH, "--fullgraph", NULL, C_TRACE, 0,
     "fail at the first graph break (exit status 1) with its reason and source line; "
     "a trace never splits, so a break fails it either way, this only shortens the "
     "message"},
    {O_FULLGRAPH, "--fullgraph", NULL, C_EXPLAIN, 0,
     "fail at the first graph break (exit status 1) instead of splitting there"},
    {O_NOUT, "--nout", "N", C_TEP | C_DIFF, 0,
     "the number of outputs the function writes (default: the model table's)"},
    {O_SEED, "--seed", "N", C_TEP | C_DIFF | TT_CLI_OPCHECK, 0,
     "seed of the random input values (default 0); the same seed gives the same inputs"},
    {O_CHECK, "--check", "LIST", TT_CLI_OPCHECK, 0,
     "the checks to run, comma-separated: schema, autograd_registration, faketensor, "
     "aot_dispatch_dynamic, or all (default)"},
    {O_DOT, "--dot", "FILE", C_TRACE, 0, "write the graph as DOT (graphviz) text"},
    {O_DOT, "--dot", "FILE", C_EXPLAIN, 0,
     "write every graph as DOT, one cluster per graph, breaks as red octagons"},
    {O_SVG, "--svg", "FILE", C_TE, 0, "render the DOT picture to SVG through graphviz"},
    {O_PNG, "--png", "FILE", C_TE, 0, "render the DOT picture to PNG through graphviz"},
    {O_COMPILE, "--compile", NULL, C_PROFILE, 0,
     "run the function through tt_compile: the first warm-up run traces and plans it, "
     "the profiled runs replay the plan (a compiled call with its steps: ops, fused "
     "chains, GEMMs); with --warmup 0 the first profiled run shows the compile"},
    {O_WARMUP, "--warmup", "N", C_PROFILE, 0,
     "runs before profiling, not recorded (default 1: caches, the allocator and the "
     "compiled plan are warm when the profile starts)"},
    {O_RUNS, "--runs", "N", C_PROFILE, 0,
     "profiled runs (default 1); the table adds them up"},
    {O_ROWS, "--rows", "N", C_PROFILE, 0,
     "rows of the table at most, the most time first (default 30; 0: all)"},
    {O_CHROME, "--chrome", "FILE", C_PROFILE, 0,
     "write the events as a Chrome trace (JSON) that ui.perfetto.dev and "
     "chrome://tracing open, with a counter track of the live tensor memory"},
    {O_SVG, "--svg", "FILE", C_PROFILE, 0,
     "draw the timeline as SVG: one band per thread, nested events under the ones "
     "that hold them, each with a tooltip"},
    {O_SYMBOLIC, "--symbolic", NULL, C_DIFF, 0,
     "compile with the input sizes as symbols (mode TT_TRACE_SYMBOLIC), so the plan "
     "compared is the one that serves every size (default: a plan for the inputs' sizes)"},
    {O_RTOL, "--rtol", "X", C_DIFF, 0,
     "relative tolerance: an element agrees when |compiled - eager| <= atol + rtol * "
     "|eager| (default 1e-5)"},
    {O_ATOL, "--atol", "X", C_DIFF, 0, "absolute tolerance (default 1e-6)"},
    {O_PRINT, "--print", NULL, C_TRACE, 0,
     "with --mode real: print each output's values after the graph"},
    {O_SAVE, "--save", "DIR", C_TRACE, 0,
     "with --mode real: write each output to DIR/outN.npy (NumPy's format; DIR is made "
     "when missing)"},
    {O_JSON, "--json", NULL, C_TRACE, 0,
     "print one JSON document instead of text: the graph's nodes (op, arguments, output "
     "dtypes and shapes), its text, and with --save the files written"},
    {O_JSON, "--json", NULL, C_EXPLAIN, 0,
     "print one JSON document instead of text: the graph and break counts, each break "
     "(kind, reason, op, file, line, function) and each graph's nodes"},
    {O_JSON, "--json", NULL, TT_CLI_OPCHECK, 0,
     "print one JSON document instead of text: the counts, each check's result and "
     "message, and the report's text"},
    {O_JSON, "--json", NULL, TT_CLI_OPS, 0,
     "print one JSON document instead of text: each op's name, schema and whether it "
     "is built in"},
    {O_JSON, "--json", NULL, C_PROFILE, 0,
     "print one JSON document instead of the table: every event (name, kind, thread, "
     "depth, start and duration in ns, bytes, FLOPs, live bytes, source line, plan "
     "node) and the peak of memory with its event"},
    {O_JSON, "--json", NULL, C_DIFF, 0,
     "print one JSON document instead of text: whether the results differ and every "
     "field of the report (output, element, both values, the largest difference, the "
     "first differing node, the pass); for two logs, whether they agree and the first "
     "divergence"},
    {O_JSON, "--json", NULL, TT_CLI_LIST, 0,
     "print one JSON document instead of text: each model function's name, input and "
     "output counts, description and input names"},
    {O_HELP, "--help", NULL, C_ALL, 0, "print this help and exit"},
};
#define NOPTIONS (int)(sizeof options / sizeof options[0])

static const struct {
    tt_cli_cmd cmd;
    const char *name, *usage, *about;
} commands[] = {
    {TT_CLI_TRACE, "trace", "tt trace --lib FILE --fn NAME [--input SPEC]... [options]",
     "Loads the model library, calls its init function, traces the function NAME on "
     "inputs made from the --input specs and prints the graph as text (one line per "
     "node: op, arguments, output dtype and shape). Custom ops are single opaque "
     "nodes. --dot, --svg and --png write pictures of it."},
    {TT_CLI_EXPLAIN, "explain", "tt explain --lib FILE --fn NAME [--input SPEC]... [options]",
     "Runs the function NAME on real inputs and records it, splitting the trace at "
     "each graph break, as torch._dynamo.explain does (the code between graphs runs "
     "eagerly). Prints the graph count, the break count, each break's kind, reason "
     "and source line (file:line), the ops of each graph, then each graph."},
    {TT_CLI_PROFILE, "profile", "tt profile --lib FILE --fn NAME [--input SPEC]... [options]",
     "Runs the function NAME on real inputs made from the --input specs, --warmup "
     "times unprofiled, then --runs times under the profiler (tt_profile_begin, as "
     "torch.profiler), and prints the summary table, one row per op or compiled "
     "step (as key_averages().table()): calls, total and self time, bytes, FLOPs "
     "and their rates, then the peak of tensor memory. The outputs are released "
     "after each run. --chrome and --svg write the timeline."},
    {TT_CLI_DIFF, "diff",
     "tt diff --lib FILE --fn NAME [--input SPEC]... [options]\ntt diff A.log B.log [--json]",
     "Runs the function NAME eagerly and through tt_compile on the same real inputs "
     "and compares the outputs element by element (tt_compare_run, as PyTorch's "
     "CompilerBisector). When they differ it prints the first differing element, the "
     "first graph node whose value differs with its source line, and the compiler "
     "pass that makes the difference: it compiles again with each pass off in turn. "
     "With two files, compares two hash logs (written by tt_hash_log_begin or "
     "TT_HASH_LOG=FILE) entry by entry and prints the first divergence. Exit status "
     "1 when the results or the logs differ, as diff's."},
    {TT_CLI_OPCHECK, "opcheck", "tt opcheck --op NAME [--lib FILE] [--input SPEC]... [options]",
     "Runs tt_opcheck (as torch.library.opcheck) on the op with example arguments "
     "made from the --input specs and prints the report: schema (mutation and "
     "aliasing), autograd_registration, faketensor (the fake kernel's metadata "
     "against the real kernel's) and aot_dispatch_dynamic (a symbolic trace replayed "
     "against eager). Exit status 1 when a check failed."},
    {TT_CLI_OPS, "ops", "tt ops [--lib FILE]",
     "Lists every registered op with its schema, in name order: the built-ins (tt::) "
     "and, with --lib, the ops the library's init function registers."},
    {TT_CLI_LIST, "list", "tt list FILE",
     "Prints the model functions the library declares in its table tt_model_fns: "
     "each one's name, its inputs and outputs, and what it computes. tt trace and tt "
     "explain trace only these functions."},
};
#define NCOMMANDS (int)(sizeof commands / sizeof commands[0])

/* "trace, explain, ...": the commands as the table lists them, for the
 * messages that name them all (a table row added is named there too). */
typedef struct {
    char s[128];
} cmd_list;

static cmd_list command_list(void)
{
    cmd_list l = {""};
    size_t len = 0;
    for (int i = 0; i < NCOMMANDS && len < sizeof l.s; i++)
        len += (size_t)snprintf(l.s + len, sizeof l.s - len, "%s%s", i ? ", " : "",
                                commands[i].name);
    return l;
}

const char *tt_cli_cmd_name(tt_cli_cmd cmd)
{
    for (int i = 0; i < NCOMMANDS; i++)
        if (commands[i].cmd == cmd)
            return commands[i].name;
    return "";
}

static const char spec_help[] =
    "Input specs:\n"
    "An input spec is DTYPE[SIZES][:requires_grad][=VALUES] or a plain number.\n"
    "  f32[3,64,64]              a 3x64x64 float tensor\n"
    "  f32[]                     a 0-dim tensor\n"
    "  f64[2,3]:requires_grad    a leaf that requires grad (floating dtypes only)\n"
    "  i64[4]=0,0,10,10          these values (as many as elements, row-major)\n"
    "  0.5                       a plain number: f64[]=0.5 (an integer, 3: i64[]=3)\n"
    "DTYPE is f32, f64, i64, i32, u8 or bool; SIZES are integers >= 0 (at most 8);\n"
    "VALUES are numbers (integers for integer dtypes; 0, 1, true, false for bool).\n"
    "Without values, random inputs are standard normal for floating dtypes,\n"
    "integers in [0, 10) for integer dtypes, and false/true for bool.\n";

static const char exit_help[] =
    "Exit status: 0 on success; 1 when the trace, a check or the library failed\n"
    "(its message is printed) or tt diff found a difference; 2 on a usage error:\n"
    "a bad option or spec, a missing library, symbol or op.\n";

/* Appends to a growing string; on failure keeps the string NULL. */
typedef struct {
    char *s;
    size_t len, cap;
    bool failed;
} strbuf;

static void sb_add(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(strbuf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0 || b->len + (size_t)need + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 1024) + (size_t)(need > 0 ? need : 0);
        char *s = need < 0 ? NULL : realloc(b->s, cap);
        if (!s) {
            free(b->s);
            *b = (strbuf){.failed = true};
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)need;
}

/* Word-wraps text at 78 columns, each line starting at column `indent`
 * (the first one continues the current line). */
static void sb_wrap(strbuf *b, const char *text, int indent, int col)
{
    const char *p = text;
    while (*p) {
        size_t w = strcspn(p, " ");
        if (col > indent && col + 1 + (int)w > 78) {
            sb_add(b, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            sb_add(b, " ");
            col++;
        }
        sb_add(b, "%.*s", (int)w, p);
        col += (int)w;
        p += w;
        while (*p == ' ')
            p++;
    }
    sb_add(b, "\n");
}

/* A usage of several forms, one a line, each after the first indented to
 * line up under the first. */
static void sb_usage(strbuf *b, const char *usage, int indent)
{
    for (const char *p = usage; *p;) {
        size_t len = strcspn(p, "\n");
        sb_add(b, "%*s%.*s\n", p == usage ? 0 : indent, "", (int)len, p);
        p += len + (p[len] != 0);
    }
}

char *tt_cli_help(tt_cli_cmd cmd)
{
    strbuf b = {0};
    if (cmd == TT_CLI_NONE) {
        sb_add(&b, "Usage: tt COMMAND [options]\n       tt COMMAND --help\n"
                   "       tt --help | --version\n\n");
        sb_wrap(&b, "tt loads a model written in C from a shared library, traces it on "
                    "fake tensors, prints its graph, writes DOT/SVG/PNG pictures, "
                    "explains graph breaks, profiles it on real tensors, compares its "
                    "compiled result with eager and opchecks custom ops.", 0, 0);
        sb_add(&b, "\nCommands:\n");
        for (int i = 0; i < NCOMMANDS; i++) {
            sb_add(&b, "  %-9s ", commands[i].name);
            sb_usage(&b, commands[i].usage, 12);
        }
        sb_add(&b, "\nOptions:\n  --help     print this help (tt COMMAND --help: the "
                   "command's)\n  --version  print the version\n\n");
        sb_wrap(&b, "A model library declares its model functions in a table, const "
                    "tt_model_fn tt_model_fns[] (<tt_model.h>: each row a name, a function "
                    "of the traced-function signature, the input and output counts and a "
                    "line saying what it computes; a row with a NULL name ends it). "
                    "Optionally it exports tt_status tt_model_init(void), which registers "
                    "its custom ops, and void tt_model_fini(void), called before it is "
                    "unloaded.", 0, 0);
        sb_add(&b, "\n%s\n%s", spec_help, exit_help);
        return b.s;
    }
    int c = 0;
    while (c < NCOMMANDS && commands[c].cmd != cmd)
        c++;
    if (c == NCOMMANDS)
        return NULL;
    sb_add(&b, "Usage: ");
    sb_usage(&b, commands[c].usage, 7);
    sb_add(&b, "\n");
    sb_wrap(&b, commands[c].about, 0, 0);
    sb_add(&b, "\nOptions:\n");
    for (int i = 0; i < NOPTIONS; i++) {
        const struct cli_opt *o = &options[i];
        if (!(o->cmds & cmd))
            continue;
        char head[32];
        snprintf(head, sizeof head, "  %s%s%s", o->name, o->metavar ? " " : "",
                 o->metavar ? o->metavar : "");
        sb_add(&b, "%-18s", head);
        int col = (int)strlen(head) > 17 ? (int)strlen(head) : 18;
        if (col > 18) {
            sb_add(&b, "\n%18s", "");
            col = 18;
        }
        char text[1024];
        snprintf(text, sizeof text, "%s%s", o->required & cmd ? "(required) " : "", o->help);
        sb_wrap(&b, text, 18, col);
    }
    if (cmd != TT_CLI_OPS && cmd != TT_CLI_LIST)
        sb_add(&b, "\n%s", spec_help);
    sb_add(&b, "\n%s", exit_help);
    return b.s;
}

static const struct cli_opt *find_option(const char *name, size_t len, tt_cli_cmd cmd,
                                         bool *other_cmd)
{
    *other_cmd = false;
    for (int i = 0; i < NOPTIONS; i++) {
        if (strlen(options[i].name) != len || memcmp(options[i].name, name, len) != 0)
            continue;
        if (options[i].cmds & cmd)
            return &options[i];
        *other_cmd = true;
    }
    return NULL;
}

/* A strict decimal in [lo, hi]. */
static int parse_uint(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!all_digits(s))
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno == ERANGE || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static const char *const check_names[] = {"schema", "autograd_registration", "faketensor",
                                          "aot_dispatch_dynamic"};

static int parse_checks(const char *s, unsigned *out, char *err, size_t n)
{
    unsigned mask = 0;
    const char *p = s;
    for (;;) {
        size_t len = strcspn(p, ",");
        char tok[64];
        token(p, len, tok, sizeof tok);
        int k = 0;
        while (k < 4 && strcmp(tok, check_names[k]) != 0)
            k++;
        if (k < 4)
            mask |= 1u << k;
        else if (!strcmp(tok, "all"))
            mask |= TT_OPCHECK_ALL;
        else {
            say(err, n, "--check: '%s' is not a check (schema, autograd_registration, "
                        "faketensor, aot_dispatch_dynamic, all)", tok);
            return -1;
        }
        if (!p[len])
            break;
        p += len + 1;
    }
    *out = mask;
    return 0;
}

/* --runs, --warmup, --rows: bounded so that a typo cannot start a run of
 * days; a profile of zero runs would be an empty table, so --runs starts
 * at 1. */
static int parse_count(const struct cli_opt *o, const char *v, tt_cli_args *a, char *err,
                       size_t n)
{
    enum { MAX_COUNT = 1000000 };
    uint64_t u;
    int lo = o->id == O_RUNS ? 1 : 0;
    const char *what = o->id == O_RUNS     ? "a number of runs"
                       : o->id == O_WARMUP ? "a number of warm-up runs"
                                           : "a number of rows";
    if (parse_uint(v, (uint64_t)lo, MAX_COUNT, &u)) {
        say(err, n, "%s: '%s' is not %s (%d to %d%s)", o->name, v, what, lo, MAX_COUNT,
            o->id == O_ROWS ? "; 0: all" : "");
        return -1;
    }
    *(o->id == O_RUNS ? &a->runs : o->id == O_WARMUP ? &a->warmup : &a->rows) = (int)u;
    return 0;
}

/* --rtol, --atol: a finite number >= 0 (tt_compare_run's contract; an
 * infinite tolerance would let every difference pass). */
static int parse_tolerance(const struct cli_opt *o, const char *v, tt_cli_args *a, char *err,
                           size_t n)
{
    char *rest = NULL;
    errno = 0;
    double d = strtod(v, &rest);
    if (!*v || *rest || errno == ERANGE || !isfinite(d) || d < 0) {
        say(err, n, "%s: '%s' is not a tolerance (a number >= 0)", o->name, v);
        return -1;
    }
    *(o->id == O_RTOL ? &a->rtol : &a->atol) = d;
    return 0;
}

/* Stores the value of option o into a. */
static int set_option(tt_cli_args *a, const struct cli_opt *o, const char *v, char *err,
                      size_t n)
{
    const char **slot = NULL;
    uint64_t u;
    switch (o->id) {
    case O_LIB: slot = &a->lib; break;
    case O_INIT: slot = &a->init; break;
    case O_FN: slot = &a->fn; break;
    case O_OP: slot = &a->op; break;
    case O_DOT: slot = &a->dot; break;
    case O_SVG: slot = &a->svg; break;
    case O_SAVE: slot = &a->save; break;
    case O_JSON: a->json = true; return 0;
    case O_PRINT: a->print = true; return 0;
    case O_PNG: slot = &a->png; break;
    case O_CHROME: slot = &a->chrome; break;
    case O_COMPILE: a->compile = true; return 0;
    case O_RUNS:
    case O_WARMUP:
    case O_ROWS: return parse_count(o, v, a, err, n);
    case O_INPUT:
        if (a->ninputs == TT_CLI_MAX_INPUTS) {
            say(err, n, "too many --input (at most %d)", TT_CLI_MAX_INPUTS);
            return -1;
        }
        if (tt_cli_spec_parse(v, &a->inputs[a->ninputs], err, n))
            return -1;
        a->ninputs++;
        return 0;
    case O_MODE:
        if (!strcmp(v, "fake"))
            a->mode = TT_TRACE_FAKE;
        else if (!strcmp(v, "symbolic"))
            a->mode = TT_TRACE_SYMBOLIC;
        else if (!strcmp(v, "real"))
            a->mode = TT_TRACE_REAL;
        else {
            say(err, n, "--mode: '%s' is not a mode (fake, symbolic, real)", v);
            return -1;
        }
        return 0;
    case O_NOUT:
        if (parse_uint(v, 1, 64, &u)) {
            say(err, n, "--nout: '%s' is not a number of outputs (1 to 64)", v);
            return -1;
        }
        a->nout = (int)u;
        return 0;
    case O_SEED:
        if (parse_uint(v, 0, UINT64_MAX, &u)) {
            say(err, n, "--seed: '%s' is not a seed (an integer >= 0)", v);
            return -1;
        }
        a->seed = u;
        return 0;
    case O_CHECK: return parse_checks(v, &a->checks, err, n);
    case O_FULLGRAPH: a->fullgraph = true; return 0;
    case O_SYMBOLIC: a->mode = TT_TRACE_SYMBOLIC; return 0;
    case O_RTOL:
    case O_ATOL: return parse_tolerance(o, v, a, err, n);
    default: break;
    }
    if (!*v) {
        say(err, n, "%s: the value is empty", o->name);
        return -1;
    }
    *slot = v;
    return 0;
}

/* tt diff takes two hash logs or a model function, never both, and the
 * table cannot say "required unless": checked here once all is read. */
static int check_diff(const tt_cli_args *a, unsigned seen, char *err, size_t n)
{
    if (a->nlogs == 1) {
        say(err, n, "diff: one hash log given ('%s'); tt diff A.log B.log compares two (see tt "
                    "diff --help)", a->logs[0]);
        return -1;
    }
    if (a->nlogs == 2) {
        for (int k = 0; k < NOPTIONS; k++) {
            int id = options[k].id;
            if (id != O_JSON && (options[k].cmds & TT_CLI_DIFF) && (seen & (1u << id))) {
                say(err, n, "diff: %s does not go with two hash logs: tt diff A.log B.log "
                            "compares logs, tt diff --lib FILE --fn NAME compares a function "
                            "compiled with eager", options[k].name);
                return -1;
            }
        }
        return 0;
    }
    if (!a->lib && !a->fn) {
        say(err, n, "diff: --lib FILE and --fn NAME, or two hash logs, are required (see tt "
                    "diff --help)");
        return -1;
    }
    if (!a->lib || !a->fn) {
        say(err, n, "diff: %s is required (see tt diff --help)",
            a->lib ? "--fn NAME" : "--lib FILE");
        return -1;
    }
    return 0;
}

static int parse_command_options(int argc, char *const *argv, int i, tt_cli_args *a,
                                 char *err, size_t n)
{
    const char *cname = tt_cli_cmd_name(a->cmd);
    unsigned seen = 0;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            a->help = true;
            return 0;
        }
        /* tt list FILE: the library may be given alone. */
        if (a->cmd == TT_CLI_LIST && arg[0] != '-' && !(seen & (1u << O_LIB))) {
            seen |= 1u << O_LIB;
            a->lib = arg;
            continue;
        }
        /* tt diff A.log B.log: the logs are operands, as diff's files. */
        if (a->cmd == TT_CLI_DIFF && arg[0] != '-') {
            if (a->nlogs == 2) {
                say(err, n, "diff: unexpected argument '%s' (tt diff compares two hash logs; "
                            "see tt diff --help)", arg);
                return -1;
            }
            a->logs[a->nlogs++] = arg;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0 || !arg[2]) {
            say(err, n, "%s: unexpected argument '%s' (options start with --; see tt %s "
                        "--help)", cname, arg, cname);
            return -1;
        }
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        bool other;
        const struct cli_opt *o = find_option(arg, len, a->cmd, &other);
        if (!o) {
            if (other)
                say(err, n, "%s: %.*s is not an option of tt %s (see tt %s --help)", cname,
                    (int)len, arg, cname, cname);
            else
                say(err, n, "%s: unknown option '%.*s' (see tt %s --help)", cname,
                    (int)len, arg, cname);
            return -1;
        }
        const char *value = NULL;
        if (!o->metavar) {
            if (eq) {
                say(err, n, "%s: %s takes no value", cname, o->name);
                return -1;
            }
        } else if (eq) {
            value = eq + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            say(err, n, "%s: %s needs a value (%s %s)", cname, o->name, o->name, o->metavar);
            return -1;
        }
        if (o->id != O_INPUT && (seen & (1u << o->id))) {
            say(err, n, "%s: %s is given twice", cname, o->name);
            return -1;
        }
        seen |= 1u << o->id;
        if (set_option(a, o, value, err, n))
            return -1;
    }
    for (int k = 0; k < NOPTIONS; k++)
        if ((options[k].required & a->cmd) && !(seen & (1u << options[k].id))) {
            say(err, n, "%s: %s %s is required (see tt %s --help)", cname, options[k].name,
                options[k].metavar, cname);
            return -1;
        }
    if ((a->save || a->print) && a->mode != TT_TRACE_REAL) {
        say(err, n, "%s: %s needs --mode real (a %s trace computes no values)", cname,
            a->save ? "--save" : "--print", a->mode == TT_TRACE_SYMBOLIC ? "symbolic" : "fake");
        return -1;
    }
    return a->cmd == TT_CLI_DIFF ? check_diff(a, seen, err, n) : 0;
}

int tt_cli_parse(int argc, char *const *argv, tt_cli_args *a, char *err, size_t n)
{
    memset(a, 0, sizeof *a);
    a->mode = TT_TRACE_FAKE;
    a->checks = TT_OPCHECK_ALL;
    a->runs = 1;
    a->warmup = 1;
    a->rows = 30;
    a->rtol = 1e-5;
    a->atol = 1e-6;
    if (argc < 2) {
        say(err, n, "a command is missing (%s; see tt --help)", command_list().s);
        return -1;
    }
    const char *c = argv[1];
    if (!strcmp(c, "--help") || !strcmp(c, "-h") || !strcmp(c, "help")) {
        a->help = true;
        if (!strcmp(c, "help") && argc > 2) {
            for (int k = 0; k < NCOMMANDS; k++)
                if (!strcmp(argv[2], commands[k].name))
                    a->cmd = commands[k].cmd;
            if (a->cmd == TT_CLI_NONE) {
                say(err, n, "help: unknown command '%s' (%s)", argv[2], command_list().s);
                return -1;
            }
        }
        return 0;
    }
    if (!strcmp(c, "--help-all")) {
        a->help = a->help_all = true;
        return 0;
    }
    if (!strcmp(c, "--version")) {
        a->version = true;
        return 0;
    }
    for (int k = 0; k < NCOMMANDS; k++)
        if (!strcmp(c, commands[k].name))
            a->cmd = commands[k].cmd;
    if (a->cmd == TT_CLI_NONE) {
        if (c[0] == '-')
            say(err, n, "unknown option '%s' (see tt --help)", c);
        else
            say(err, n, "unknown command '%s' (%s; see tt --help)", c, command_list().s);
        return -1;
    }
    return parse_command_options(argc, argv, 2, a, err, n);
}

void tt_cli_args_clear(tt_cli_args *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->ninputs; i++)
        tt_cli_spec_clear(&a->inputs[i]);
    a->ninputs = 0;
}

/* ---------------------------------------------------------------- opcheck */

/* Reads element i of spec's values as int64 (integer and bool dtypes). */
static int64_t int_at(const tt_cli_spec *s, int64_t i)
{
    switch (s->dtype) {
    case TT_I64: return ((const int64_t *)s->values)[i];
    case TT_I32: return ((const int32_t *)s->values)[i];
    case TT_U8: return ((const uint8_t *)s->values)[i];
    default: return ((const bool *)s->values)[i];
    }
}

static double float_at(const tt_cli_spec *s, int64_t i)
{
    if (s->dtype == TT_F32)
        return ((const float *)s->values)[i];
    if (s->dtype == TT_F64)
        return ((const double *)s->values)[i];
    return (double)int_at(s, i);
}

/* Argument i of op from spec; lists are written at *next in lists. */
static int make_arg(const tt_op *op, int i, const tt_arg *arg, const tt_cli_spec *sp,
                    tt_value *v, tt_tensor **owned, int *nowned, int64_t **next, char *err,
                    size_t n)
{
    char type[64], want[96];
    tt_type_str(&arg->type, type, sizeof type);
    const tt_type *t = &arg->type;
    bool is_int = sp->dtype == TT_I64 || sp->dtype == TT_I32 || sp->dtype == TT_U8;
    if (t->base == TT_T_TENSOR && !t->is_list) {
        tt_tensor *x = tt_cli_spec_tensor(sp, false);
        if (!x) {
            say(err, n, "%s: argument '%s' (#%d) from '%s': %s", tt_op_name(op), arg->name,
                i + 1, sp->text, tt_errmsg());
            return -1;
        }
        owned[(*nowned)++] = x;
        *v = tt_v_tensor(x);
        return 0;
    }
    if (sp->requires_grad) {
        say(err, n, "%s: argument '%s' (#%d) is %s, not a tensor: ':requires_grad' does not "
                    "apply to it", tt_op_name(op), arg->name, i + 1, type);
        return -1;
    }
    bool listable = t->is_list && (t->base == TT_T_INT || t->base == TT_T_SYMINT ||
                                   t->base == TT_T_FLOAT);
    bool scalar = !t->is_list && (t->base == TT_T_INT || t->base == TT_T_SYMINT ||
                                  t->base == TT_T_FLOAT || t->base == TT_T_BOOL ||
                                  t->base == TT_T_SCALAR);
    if (!listable && !scalar) {
        say(err, n, "%s: argument '%s' (#%d) is %s, which tt opcheck cannot make from an "
                    "--input spec", tt_op_name(op), arg->name, i + 1, type);
        return -1;
    }
    bool float_arg = t->base == TT_T_FLOAT || t->base == TT_T_SCALAR;
    if (t->is_list) {
        int64_t nv = sp->numel;
        bool ok = sp->has_values && sp->ndim == 1 &&
                  (t->base == TT_T_FLOAT ? (is_int || tt_dtype_is_float(sp->dtype)) : is_int) &&
                  (t->list_size == 0 || nv == t->list_size);
        if (t->list_size)
            snprintf(want, sizeof want, "%s[%d]=...", t->base == TT_T_FLOAT ? "f64" : "i64",
                     t->list_size);
        else
            snprintf(want, sizeof want, "%s[N]=...", t->base == TT_T_FLOAT ? "f64" : "i64");
        if (!ok) {
            say(err, n, "%s: argument '%s' (#%d) is %s: give it as %s (a 1-dim %s spec with "
                        "values), not '%s'", tt_op_name(op), arg->name, i + 1, type, want,
                t->base == TT_T_FLOAT ? "number" : "integer", sp->text);
            return -1;
        }
        int64_t *dst = *next;
        for (int64_t k = 0; k < nv; k++) {
            if (t->base == TT_T_FLOAT) {
                double d = float_at(sp, k);
                memcpy(&dst[k], &d, sizeof d);
            } else {
                dst[k] = int_at(sp, k);
            }
        }
        *next += nv;
        *v = t->base == TT_T_FLOAT ? tt_v_floats((int)nv, (const double *)(void *)dst)
                                   : tt_v_ints((int)nv, dst);
        return 0;
    }
    bool ok = sp->has_values && sp->ndim == 0 &&
              (t->base == TT_T_BOOL ? sp->dtype == TT_BOOL
               : float_arg          ? sp->dtype != TT_BOOL
                                    : is_int);
    if (!ok) {
        const char *ex = t->base == TT_T_BOOL ? "bool[]=1" : float_arg ? "f64[]=0.5" : "i64[]=3";
        say(err, n, "%s: argument '%s' (#%d) is %s: give it as a 0-dim spec with a value "
                    "(%s), not '%s'", tt_op_name(op), arg->name, i + 1, type, ex, sp->text);
        return -1;
    }
    if (t->base == TT_T_BOOL)
        *v = tt_v_bool(int_at(sp, 0) != 0);
    else if (t->base == TT_T_SCALAR && is_int)
        *v = tt_v_int(int_at(sp, 0));
    else if (float_arg)
        *v = tt_v_float(float_at(sp, 0));
    else
        *v = tt_v_int(int_at(sp, 0));
    return 0;
}

int tt_cli_opcheck_args(const tt_op *op, const tt_cli_args *a, tt_value *args, int *nargs,
                        tt_tensor **owned, int *nowned, int64_t **lists, char *err,
                        size_t n)
{
    *nargs = 0;
    *nowned = 0;
    *lists = NULL;
    const tt_schema *s = tt_op_schema(op);
    if (!s) {
        say(err, n, "%s: %s", tt_op_name(op), tt_errmsg());
        return -1;
    }
    int na = tt_schema_nargs(s);
    if (a->ninputs > na) {
        say(err, n, "%s takes %d argument%s, got %d --input", tt_op_name(op), na,
            na == 1 ? "" : "s", a->ninputs);
        return -1;
    }
    int64_t total = 1;
    for (int i = 0; i < a->ninputs; i++)
        total += a->inputs[i].has_values ? a->inputs[i].numel : 0;
    *lists = malloc(sizeof **lists * (size_t)total);
    if (!*lists) {
        say(err, n, "out of memory for the arguments of %s", tt_op_name(op));
        return -1;
    }
    int64_t *next = *lists;
    for (int i = 0; i < a->ninputs; i++) {
        if (make_arg(op, i, tt_schema_arg(s, i), &a->inputs[i], &args[i], owned, nowned,
                     &next, err, n))
            return -1;
        *nargs = i + 1;
    }
    for (int i = a->ninputs; i < na; i++) {
        const tt_arg *arg = tt_schema_arg(s, i);
        if (!arg->has_default) {
            char type[64];
            tt_type_str(&arg->type, type, sizeof type);
            say(err, n, "%s needs argument '%s' (#%d, %s): add an --input for it "
                        "(%d given)", tt_op_name(op), arg->name, i + 1, type, a->ninputs);
            return -1;
        }
    }
    return 0;
}

/* Whether the --input specs make op's arguments; why not into err. */
static bool specs_fit(const tt_op *op, const tt_cli_args *a, char *err, size_t n)
{
    tt_value args[TT_CLI_MAX_INPUTS];
    tt_tensor *owned[TT_CLI_MAX_INPUTS];
    int nargs = 0, nowned = 0;
    int64_t *lists = NULL;
    bool fit = tt_cli_opcheck_args(op, a, args, &nargs, owned, &nowned, &lists, err, n) == 0;
    for (int i = 0; i < nowned; i++)
        tt_release(owned[i]);
    free(lists);
    return fit;
}

const tt_op *tt_cli_find_op(const tt_cli_args *a, char *err, size_t n)
{
    enum { MAX_CANDS = 64 };
    const tt_op *c[MAX_CANDS];
    err[0] = '\0';
    const char *sep = a->op ? strstr(a->op, "::") : NULL;
    int nc = a->op ? tt_op_overloads(a->op, c, MAX_CANDS) : 0;
    /* One op, or a full name, or no --input to pick by: plain look-up
     * (whose failure tt reports, listing the overloads). */
    bool only_self = nc == 1 && strcmp(tt_op_name(c[0]), a->op) == 0;
    if (nc == 0 || only_self || a->ninputs == 0 || (sep && strchr(sep + 2, '.'))) {
        const tt_op *op = a->op ? tt_op_find(a->op) : NULL;
        tt_clear_error();
        return op;
    }
    nc = nc < MAX_CANDS ? nc : MAX_CANDS;
    const tt_op *fit[MAX_CANDS];
    int nfit = 0;
    char whys[2048] = "";
    size_t wl = 0;
    for (int i = 0; i < nc; i++) {
        char why[512], sch[512];
        if (specs_fit(c[i], a, why, sizeof why)) {
            if (i == 0 && strcmp(tt_op_name(c[i]), a->op) == 0)
                return c[i]; /* the name itself wins when it fits */
            fit[nfit++] = c[i];
        } else if (wl < sizeof whys - 1) {
            tt_schema_print(tt_op_schema(c[i]), sch, sizeof sch);
            wl += (size_t)snprintf(whys + wl, sizeof whys - wl, "%s%s: %s", wl ? "; " : "", sch,
                                   why);
        }
    }
    tt_clear_error();
    if (nfit == 1)
        return fit[0];
    if (nfit == 0) {
        say(err, n, "--op %s: no overload takes the --input specs given: %s", a->op, whys);
        return NULL;
    }
    char list[2048] = "";
    size_t ll = 0;
    for (int k = 0; k < nfit && ll < sizeof list - 1; k++) {
        char sch[512];
        tt_schema_print(tt_op_schema(fit[k]), sch, sizeof sch);
        ll += (size_t)snprintf(list + ll, sizeof list - ll, "%s%s", k ? "; " : "", sch);
    }
    say(err, n, "--op %s: the --input specs fit %d overloads, so the op is ambiguous: %s; name "
                "one (--op %s)", a->op, nfit, list, tt_op_name(fit[0]));
    return NULL;
}
