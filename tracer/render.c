/* Rendering graphs and explain results to SVG or PNG through graphviz's
 * libgvc: our DOT text is parsed with agmemread, laid out with "dot" and
 * rendered with gvRenderFilename. This file alone is libtensortrace-render
 * (tt_render.h), the only code that includes graphviz headers or links
 * graphviz, so neither the core library nor a program that never renders
 * depends on them. It uses the core library's public API only.
 *
 * Graphviz keeps its error hook, its error counts and much else in
 * process-wide state and is not thread-safe, so every render holds one
 * lock, and its messages (which it would print on stderr) are collected
 * through agseterrf and become our error message instead.
 *
 * One GVC context serves the whole process and is never freed: graphviz
 * 2.42's pango plugin caches a pointer to the last font name, which lives
 * in the context, so the second render with a fresh context read it after
 * gvFreeContext had freed it (a use-after-free that ASan reports). The dot
 * tool, too, keeps one context for all its graphs. */
#include "render_impl.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cgraph.h>
#include <gvc.h>

static pthread_mutex_t gv_lock = PTHREAD_MUTEX_INITIALIZER;
/* What graphviz said during the current render (guarded by gv_lock). */
static char gv_msg[1024];
static size_t gv_len;
static GVC_t *gvc; /* made on first use, kept (guarded by gv_lock) */

static void append(const char *msg)
{
    size_t n = strlen(msg), room = sizeof gv_msg - 1 - gv_len;
    if (n > room)
        n = room;
    memcpy(gv_msg + gv_len, msg, n);
    gv_len += n;
    gv_msg[gv_len] = '\0';
}

/* graphviz's user error function: it receives "Error", ": " and the
 * message as separate pieces; messages are joined with "; " on one line.
 * What does not fit is cut. */
static int collect(char *msg)
{
    if (gv_len > 0 && gv_msg[gv_len - 1] == '\n') {
        gv_msg[gv_len - 1] = ';';
        append(" ");
    }
    append(msg);
    return 0;
}

/* The collected messages: "Error: a; Warning: b". */
static const char *gv_said(void)
{
    while (gv_len > 0 && strchr(" \n\r;", gv_msg[gv_len - 1]))
        gv_msg[--gv_len] = '\0';
    return gv_len ? gv_msg : "no message from graphviz";
}

static tt_status check_args(const char *fn, const void *obj, const char *objname,
                            const char *format, const char *path)
{
    if (!obj)
        return tt_error(TT_EINVAL, "%s: argument '%s' (#1) is NULL", fn, objname);
    if (!format || (strcmp(format, "svg") != 0 && strcmp(format, "png") != 0))
        return tt_error(TT_EINVAL, "%s: argument 'format' (#2) expects \"svg\" or \"png\", "
                                   "got %s%s%s", fn, format ? "\"" : "",
                        format ? format : "NULL", format ? "\"" : "");
    if (!path || !*path)
        return tt_error(TT_EINVAL, "%s: argument 'path' (#3) expects a file name, got %s", fn,
                        path ? "\"\"" : "NULL");
    return TT_OK;
}

/* Lays out DOT text `dot` (owned: freed here) and renders it as `format`
 * into `path`, or (path NULL) into *data, a string to free(). */
static tt_status render_to(const char *fn, char *dot, const char *format, const char *path,
                           char **data)
{
    if (!dot)
        return tt_errcode();
    /* Open the file ourselves first: a path we cannot write is the user's
     * mistake, and is reported as such rather than as graphviz's message. */
    FILE *probe = path ? fopen(path, "wb") : NULL;
    if (path && !probe) {
        int err = errno;
        free(dot);
        return tt_error(TT_EINVAL, "%s: argument 'path' (#3): cannot write \"%s\": %s", fn,
                        path, strerror(err));
    }
    if (probe)
        fclose(probe);

    tt_status st = TT_OK;
    pthread_mutex_lock(&gv_lock);
    gv_len = 0;
    gv_msg[0] = '\0';
    agusererrf old_hook = agseterrf(collect);
    if (!gvc)
        gvc = gvContext();
    Agraph_t *ag = gvc ? agmemread(dot) : NULL;
    if (!gvc)
        st = tt_error(TT_ENOMEM, "%s: graphviz could not create its context: %s", fn,
                      gv_said());
    else if (!ag)
        st = tt_error(TT_EINTERNAL, "%s: graphviz could not read our DOT text: %s", fn,
                      gv_said());
    else if (gvLayout(gvc, ag, "dot") != 0)
        st = tt_error(TT_EINTERNAL, "%s: graphviz's dot layout failed: %s", fn, gv_said());
    else {
        char *out = NULL;
        unsigned int len = 0;
        if (path && gvRenderFilename(gvc, ag, format, path) != 0)
            st = tt_error(TT_EINVAL, "%s: graphviz could not render %s to \"%s\": %s", fn,
                          format, path, gv_said());
        else if (!path && gvRenderData(gvc, ag, format, &out, &len) != 0)
            st = tt_error(TT_EINTERNAL, "%s: graphviz could not render %s: %s", fn, format,
                          gv_said());
        else if (!path && !(*data = strndup(out ? out : "", len)))
            st = tt_error(TT_ENOMEM, "%s: out of memory", fn);
        if (out)
            gvFreeRenderData(out);
        gvFreeLayout(gvc, ag);
    }
    if (ag)
        agclose(ag);
    agseterrf(old_hook);
    pthread_mutex_unlock(&gv_lock);
    free(dot);
    if (st && path)
        remove(path); /* no empty or partial picture left behind */
    return st;
}

static tt_status render_dot(const char *fn, char *dot, const char *format, const char *path)
{
    return render_to(fn, dot, format, path, NULL);
}

tt_status tt__render_svg_text(const char *fn, char *dot, char **svg)
{
    *svg = NULL;
    return render_to(fn, dot, "svg", NULL, svg);
}

tt_status tt_graph_render(const tt_graph *g, const char *format, const char *path)
{
    tt_status st = check_args("tt_graph_render", g, "graph", format, path);
    return st ? st : render_dot("tt_graph_render", tt_graph_to_dot(g), format, path);
}

tt_status tt_explain_render(const tt_explain *e, const char *format, const char *path)
{
    tt_status st = check_args("tt_explain_render", e, "explain", format, path);
    return st ? st : render_dot("tt_explain_render", tt_explain_to_dot(e), format, path);
}
