/* LeakSanitizer hooks for programs that lay out graphs with graphviz: its
 * dot layout (virtual edges of clusters) and its pango/cairo/fontconfig
 * text layout leak whatever the caller does. In a sanitizer build
 * LeakSanitizer reads these hooks (the environment's LSAN_OPTIONS still
 * wins); elsewhere they are unused. Full stacks (fast_unwind_on_malloc=0),
 * so only allocations made under those libraries match, never ours.
 *
 * The header defines the two hooks, so include it in exactly one file of a
 * program (tools/demo.c, tools/tt.c, tests/test_dot.c). A program may
 * define LSAN_GRAPHVIZ_OPTIONS before including it to add options. */
#ifndef LSAN_GRAPHVIZ_H
#define LSAN_GRAPHVIZ_H

#ifndef LSAN_GRAPHVIZ_OPTIONS
#define LSAN_GRAPHVIZ_OPTIONS "fast_unwind_on_malloc=0"
#endif

const char *__lsan_default_options(void);
const char *__lsan_default_options(void) { return LSAN_GRAPHVIZ_OPTIONS; }
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libgvplugin_dot_layout.so\n"
           "leak:libgvplugin_pango.so\n"
           "leak:libpango\n"
           "leak:libfontconfig.so\n"
           "leak:libcairo.so\n";
}

#endif /* LSAN_GRAPHVIZ_H */
