/* Internal to libtensortrace-render: the layout and rendering that the
 * pictures (render.c) and the HTML view (render_html.c) share. */
#ifndef TT_RENDER_IMPL_H
#define TT_RENDER_IMPL_H

#include "tt_render.h"

/* Lays out DOT text `dot` (owned: freed here) and renders it as SVG into
 * *svg, a string to free(); the error names fn. */
tt_status tt__render_svg_text(const char *fn, char *dot, char **svg);

#endif
