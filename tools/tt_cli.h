/* The parsing half of `tt`, the command-line tool: input specs, the
 * command line, the help texts, and turning specs into tensors and opcheck
 * arguments. Kept apart from tt.c (which loads libraries and runs the
 * commands) so tests can call every parser directly.
 *
 * Every parser writes a one-line message into err (without the "tt: "
 * prefix main adds) and returns -1 on a bad input; nothing here exits or
 * prints on its own.
 */
#ifndef TT_CLI_H
#define TT_CLI_H

#include <stdio.h>

#include "tensortrace.h"

#define TT_CLI_MAX_INPUTS 64

/* ------------------------------------------------------------ input specs */

/* An --input spec:
 *   DTYPE[SIZES][:requires_grad][=VALUES][:requires_grad]
 * or a plain number, a 0-dim tensor holding it: 3 is i64[]=3, 0.5 is
 * f64[]=0.5 (so an opcheck float or int argument can be written as is).
 * f32[3,64,64], f64[2,3]:requires_grad, i64[4]=0,0,10,10, f32[] (0-dim).
 * DTYPE is f32 f64 i64 i32 u8 bool; SIZES are non-negative decimal
 * integers (at most 8); VALUES are numel comma-separated numbers in
 * row-major order (integers for integer dtypes, 0/1/true/false for bool). */
typedef struct {
    const char *text; /* the spec as given (borrowed) */
    tt_dtype dtype;
    int ndim;
    int64_t sizes[TT_MAX_DIMS];
    int64_t numel;
    bool requires_grad;
    bool has_values;
    void *values; /* numel elements of dtype, row-major (malloc'd) */
} tt_cli_spec;

/* Parses text into *spec (cleared first). On failure writes
 * "bad --input 'TEXT': what is wrong" into err and returns -1; *spec then
 * holds nothing to clear. */
int tt_cli_spec_parse(const char *text, tt_cli_spec *spec, char *err, size_t n);
void tt_cli_spec_clear(tt_cli_spec *spec);

/* A new tensor for spec (the caller releases it). With values: a real
 * tensor holding them. Otherwise, fake: a fake tensor (no memory, for
 * fake and symbolic traces); real: values from the global generator (seed
 * it with tt_manual_seed first): standard normal for floating dtypes,
 * integers in [0, 10) for integer dtypes, false/true for bool. */
tt_tensor *tt_cli_spec_tensor(const tt_cli_spec *spec, bool fake);

/* ----------------------------------------------------------- command line */

typedef enum {
    TT_CLI_NONE = 0,
    TT_CLI_TRACE = 1 << 0,
    TT_CLI_EXPLAIN = 1 << 1,
    TT_CLI_OPCHECK = 1 << 2,
    TT_CLI_OPS = 1 << 3,
    TT_CLI_LIST = 1 << 4,
    TT_CLI_PROFILE = 1 << 5,
    TT_CLI_DIFF = 1 << 6,
} tt_cli_cmd;

typedef struct {
    tt_cli_cmd cmd;
    bool help;    /* --help: print the help of cmd (TT_CLI_NONE: of tt) */
    bool version; /* --version */
    bool help_all; /* --help-all: tt's help and every command's (the man page) */
    bool json;     /* --json: one JSON document on stdout */
    bool print;    /* --print: print the outputs' values (real mode) */
    const char *save; /* --save DIR: one .npy per output (real mode) */
    const char *lib, *init, *fn, *op; /* borrowed from argv; NULL: not given */
    const char *dot, *svg, *png;
    tt_cli_spec inputs[TT_CLI_MAX_INPUTS];
    int ninputs;
    tt_trace_mode mode; /* default fake */
    bool fullgraph;
    int nout; /* 0 (default): the model table's count, or 1 */
    uint64_t seed; /* default 0 */
    unsigned checks; /* tt_opcheck_check mask; default all */
    /* tt profile: through tt_compile; the runs profiled (default 1) after
     * `warmup` unprofiled ones (default 1); the table's rows (default 30,
     * 0: all); --chrome FILE (the timeline is --svg) */
    bool compile;
    int runs, warmup, rows;
    const char *chrome;
    /* tt diff: the tolerances of tt_compare_run (default rtol 1e-5, atol
     * 1e-6; --symbolic sets mode), or two hash logs (nlogs 2, borrowed
     * from argv) to compare instead of a model function */
    double rtol, atol;
    const char *logs[2];
    int nlogs;
} tt_cli_args;

/* Parses argv (argv[0] is the program) into *a. Returns 0, or -1 with a
 * one-line message in err (an unknown command or option, a missing or
 * malformed value, a bad --input, a missing required option). Release
 * what it holds with tt_cli_args_clear, in both cases. */
int tt_cli_parse(int argc, char *const *argv, tt_cli_args *a, char *err, size_t n);
void tt_cli_args_clear(tt_cli_args *a);

const char *tt_cli_cmd_name(tt_cli_cmd cmd); /* "trace"; "" for none */

/* The help of a command, or of tt for TT_CLI_NONE: a usage line and every
 * option the command takes. Built from the same table the parser reads,
 * so the two cannot drift. Returns a string to free(), or NULL. */
char *tt_cli_help(tt_cli_cmd cmd);

/* ---------------------------------------------------------------- opcheck */

/* The arguments of op from the --input specs, in schema order (the
 * schema's defaults fill what is not given). A Tensor argument gets a real
 * tensor made by tt_cli_spec_tensor; a list argument (int[N], int[],
 * SymInt[]) takes a 1-dim integer spec with values (i64[4]=0,0,10,10) and
 * gets them as an int list; an int, SymInt, float, bool or Scalar argument
 * takes a 0-dim spec with a value (i64[]=3, f64[]=0.5). Writes nargs values
 * into args; the tensors made go into owned[0..*nowned) for the caller to
 * release, and *ints holds the int lists (free() it). Returns 0, or -1
 * with a message naming the argument and what it expects. */
int tt_cli_opcheck_args(const tt_op *op, const tt_cli_args *a, tt_value *args, int *nargs,
                        tt_tensor **owned, int *nowned, int64_t **ints, char *err,
                        size_t n);

/* The op --op names, picked as PyTorch's OpOverloadPacket picks it:
 * "ns::name.overload" is that op; for "ns::name", the op of that name when
 * the --input specs make its arguments, else the one overload they make
 * arguments for (with no --input, or when "ns::name" has no overloads,
 * the plain look-up). NULL with err empty when nothing has the name, or with a
 * message in err when the specs fit several overloads (it lists them) or
 * none (it lists each with why). */
const tt_op *tt_cli_find_op(const tt_cli_args *a, char *err, size_t n);

#endif /* TT_CLI_H */
