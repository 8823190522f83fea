/* Linked into the trace_graph example in the build tree only (not part of
 * the example): LeakSanitizer's hooks for graphviz's own leaks, so the
 * sanitizer pass of tools/run test judges the example's memory alone. */
#include "lsan_graphviz.h"
