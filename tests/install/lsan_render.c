/* A program that renders, as a user builds it against the installed
 * library: the LeakSanitizer hooks for graphviz come from the installed
 * <lsan_graphviz.h> (in exactly one file of the program), so a build with
 * -fsanitize=address reports the program's leaks and not graphviz's:
 *     cc lsan_render.c $(pkg-config --cflags --libs tensortrace tensortrace-render)
 * Run by the install check (tools/run test), which also checks that the
 * same list is installed as share/tensortrace/lsan-graphviz.supp. */
#include <stdio.h>
#include <string.h>
#include <tensortrace.h>

#include <lsan_graphviz.h>

static tt_status block(tt_tensor **in, int nin, tt_tensor **out, int nout, void *ud)
{
    (void)nin, (void)nout, (void)ud;
    out[0] = tt_relu(in[0]);
    return out[0] ? TT_OK : tt_errcode();
}

int main(int argc, char **argv)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/lsan_render.svg", argc > 1 ? argv[1] : ".");
    tt_tensor *x = tt_ones(2, (int64_t[]){2, 3}, TT_F32);
    tt_graph *g = tt_trace(block, 1, &x, &(tt_trace_opts){.mode = TT_TRACE_FAKE});
    if (!g || tt_graph_render(g, "svg", path) != TT_OK) {
        fprintf(stderr, "lsan_render: %s\n", tt_errmsg());
        return 1;
    }
    /* the hooks are what LeakSanitizer would read */
    if (!strstr(__lsan_default_suppressions(), "leak:libgvplugin_dot_layout.so")) {
        fprintf(stderr, "lsan_render: the installed hooks lack graphviz's layout\n");
        return 1;
    }
    tt_graph_free(g);
    tt_release(x);
    printf("rendered %s\n", path);
    return 0;
}
