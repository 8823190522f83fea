/* tensortrace rendering: graphs and explain results drawn to SVG or PNG
 * through graphviz.
 *
 * A library of its own, libtensortrace-render (pkg-config module
 * tensortrace-render), so that a program that never renders does not link
 * graphviz: the core library writes DOT text (tt_graph_to_dot,
 * tt_explain_to_dot in tt_trace.h) and this one lays it out and draws it.
 * Build a program that renders with
 *     cc app.c $(pkg-config --cflags --libs tensortrace tensortrace-render)
 */
#ifndef TT_RENDER_H
#define TT_RENDER_H

#include "tt_trace.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the public API: see tt_runtime.h */

/* Renders through graphviz (dot layout) into the file at `path`; format
 * is "svg" or "png". Graphviz's messages become the error message. */
tt_status tt_graph_render(const tt_graph *g, const char *format, const char *path);
tt_status tt_explain_render(const tt_explain *e, const char *format, const char *path);
/* The graph as one self-contained HTML file (no network): the picture as
 * inline SVG, named scopes as frames that fold and unfold (a click on the
 * frame or on the scope's line in the list beside it), a node's op,
 * schema, arguments, each value's dtype, sizes and strides, file:line
 * and scope on a click, and a search box that marks the nodes whose op,
 * name or line contain its text (opening the scopes they are in). The
 * URL's fragment sets the first state: #fold=all folds every top-level
 * scope, #fold=all&open=layer1 leaves layer1's open, #find=matmul
 * searches. */
tt_status tt_graph_write_html(const tt_graph *g, const char *path);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
