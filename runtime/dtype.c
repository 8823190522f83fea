/* The dtype table and PyTorch's type promotion. */
#include "tensor_impl.h"

#include <math.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
    bool is_float;
} dtypes[] = {
#define TT_X_ROW(e, name, ctype, size, isf) {name, size, isf},
    TT_DTYPE_LIST(TT_X_ROW)
#undef TT_X_ROW
};

size_t tt_dtype_size(tt_dtype dt) { return tt__dtype_size(dt); }

const char *tt_dtype_name(tt_dtype dt)
{
    return (unsigned)dt < TT_DTYPE_COUNT ? dtypes[dt].name : "?";
}

bool tt_dtype_is_float(tt_dtype dt) { return tt__dtype_is_float(dt); }

int tt_dtype_from_name(const char *name)
{
    static const struct {
        const char *alias;
        tt_dtype dt;
    } aliases[] = {
        {"float32", TT_F32}, {"float", TT_F32},  {"float64", TT_F64},
        {"double", TT_F64},  {"int64", TT_I64},  {"long", TT_I64},
        {"int32", TT_I32},   {"int", TT_I32},    {"uint8", TT_U8},
    };
    if (!name)
        return -1;
    for (int i = 0; i < TT_DTYPE_COUNT; i++)
        if (strcmp(name, dtypes[i].name) == 0)
            return i;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].alias) == 0)
            return (int)aliases[i].dt;
    return -1;
}

/* Rank in PyTorch's lattice for the dtypes we have. */
static int rank(tt_dtype dt)
{
    switch (dt) {
    case TT_BOOL: return 0;
    case TT_U8: return 1;
    case TT_I32: return 2;
    case TT_I64: return 3;
    case TT_F32: return 4;
    case TT_F64: return 5;
    default: return -1;
    }
}

tt_dtype tt_promote_types(tt_dtype a, tt_dtype b)
{
    return rank(a) >= rank(b) ? a : b;
}

double tt__load(const void *p, tt_dtype dt)
{
    switch (dt) {
    case TT_F32: return *(const float *)p;
    case TT_F64: return *(const double *)p;
    case TT_I64: return (double)*(const int64_t *)p;
    case TT_I32: return *(const int32_t *)p;
    case TT_U8: return *(const uint8_t *)p;
    case TT_BOOL: return *(const bool *)p;
    default: return 0;
    }
}

/* Float to integer conversion of a value out of range is undefined in C;
 * clamp first (PyTorch's result there is unspecified too). */
static int64_t to_i64(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 9.2233720368547758e18)
        return INT64_MAX;
    if (v <= -9.2233720368547758e18)
        return INT64_MIN;
    return (int64_t)v;
}

void tt__store(void *p, tt_dtype dt, double v)
{
    switch (dt) {
    case TT_F32: *(float *)p = (float)v; break;
    case TT_F64: *(double *)p = v; break;
    case TT_I64: *(int64_t *)p = to_i64(v); break;
    case TT_I32: *(int32_t *)p = (int32_t)to_i64(v); break;
    case TT_U8: *(uint8_t *)p = (uint8_t)to_i64(v); break;
    case TT_BOOL: *(bool *)p = v != 0; break;
    default: break;
    }
}
