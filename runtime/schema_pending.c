/* TEMPORARY: weak stand-ins so the library links while runtime/schema.c
 * and runtime/value.c are being written. Strong definitions there replace
 * these; this file is deleted when they land. */
#include "dispatch_impl.h"

#define WEAK __attribute__((weak))
WEAK void tt__schema_mark_write(tt_schema *s, int i) { (void)s, (void)i; }
WEAK int tt_device_from_name(const char *n) { (void)n; return -1; }
WEAK const char *tt_device_name(tt_device d) { (void)d; return "?"; }
WEAK const tt_arg *tt_schema_arg(const tt_schema *s, int i) { (void)s, (void)i; return NULL; }
WEAK void tt_schema_free(tt_schema *s) { (void)s; }
WEAK const char *tt_schema_name(const tt_schema *s) { (void)s; return ""; }
WEAK int tt_schema_nargs(const tt_schema *s) { (void)s; return 0; }
WEAK int tt_schema_nreturns(const tt_schema *s) { (void)s; return 0; }
WEAK const char *tt_schema_ns(const tt_schema *s) { (void)s; return ""; }
WEAK const char *tt_schema_overload(const tt_schema *s) { (void)s; return ""; }
WEAK tt_schema *tt_schema_parse(const char *t) { (void)t; tt_error(TT_ESCHEMA, "schema parser pending"); return NULL; }
WEAK int tt_schema_print(const tt_schema *s, char *b, size_t n) { (void)s; if (n) b[0] = 0; return 0; }
WEAK const tt_arg *tt_schema_return(const tt_schema *s, int i) { (void)s, (void)i; return NULL; }
WEAK char *tt_type_str(const tt_type *t, char *b, size_t n) { (void)t; if (n) b[0] = 0; return b; }
WEAK void tt_value_clear(tt_value *v) { if (v->kind == TT_V_TENSOR) tt_release(v->u.t); *v = tt_v_none(); }
WEAK char *tt_value_describe(const tt_value *v, char *b, size_t n) { (void)v; if (n) b[0] = 0; return b; }
