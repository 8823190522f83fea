/* Fuzz target: the `tt` tool's command-line parser (tools/tt_cli.c). The
 * input is a command line, one argument per line (so seeds read as text).
 * A refused command line has a message; an accepted one holds only what
 * the parser promises (a known command, at most TT_CLI_MAX_INPUTS inputs,
 * a known mode), and its command's help can be printed. */
#include "tt_cli.h"

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    char *argv[130] = {"tt"};
    int argc = 1;
    for (char *p = text; argc < 129;) {
        argv[argc++] = p;
        char *nl = strchr(p, '\n');
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    argv[argc] = NULL;
    tt_cli_args a;
    char err[1024];
    err[0] = '\0';
    if (tt_cli_parse(argc, argv, &a, err, sizeof err)) {
        FUZZ_CHECK(err[0], "a command line was refused with no message");
    } else {
        FUZZ_CHECK(a.ninputs >= 0 && a.ninputs <= TT_CLI_MAX_INPUTS, "%d inputs", a.ninputs);
        FUZZ_CHECK(a.mode >= TT_TRACE_FAKE && a.mode <= TT_TRACE_SYMBOLIC, "mode %d",
                   (int)a.mode);
        FUZZ_CHECK(a.nout >= 0, "nout %d", a.nout);
        FUZZ_CHECK(tt_cli_cmd_name(a.cmd), "command %d has no name", (int)a.cmd);
        char *help = tt_cli_help(a.cmd);
        FUZZ_CHECK(help && help[0], "no help for command %d", (int)a.cmd);
        free(help);
    }
    tt_cli_args_clear(&a);
    free(text);
    return 0;
}
