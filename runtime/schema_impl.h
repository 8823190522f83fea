/* Internal: helpers shared by schema.c and value.c. Not installed; the
 * registry and the dispatcher use the public accessors of tt_runtime.h. */
#ifndef TT_SCHEMA_IMPL_H
#define TT_SCHEMA_IMPL_H

#include "tensor_impl.h"

/* The shortest text that strtod reads back as exactly `v`, spelled as
 * Python's repr spells it ("0.1", "1e-05", "2.5", "1e+20"). An integral
 * value gets a ".0" ("1.0"), so the text never reads back as an integer: a
 * Scalar default keeps its kind through a round trip.
 * Non-finite values print as "inf", "-inf", "nan". Writes into buf (always
 * NUL-terminated when n > 0); returns the length it needed, as snprintf. */
int tt__format_double(double v, char *buf, size_t n);

/* PyTorch's name of a dtype as a schema default spells it ("float32",
 * "int64"); tt_dtype_from_name reads each back. "?" when out of range. */
const char *tt__dtype_schema_name(tt_dtype dt);
/* PyTorch's c10::ScalarType code of a dtype (int64 is 4), as PyTorch
 * prints a dtype default; -1 when out of range. */
int tt__dtype_scalar_type_code(tt_dtype dt);

/* One argument as a schema writes it ("float eps=1e-05"), with "*, "
 * before a keyword-only one; its alias annotation only when with_alias.
 * Returns the length needed, as snprintf. */
int tt__arg_print(const tt_arg *a, bool with_alias, char *buf, size_t n);

#endif
