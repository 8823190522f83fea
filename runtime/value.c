/* Boxed values (tt_value) and device names: releasing a call's results and
 * describing a value for an error message. */
#include "schema_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const device_names[] = {
    [TT_DEV_CPU] = "cpu",
    [TT_DEV_CUDA] = "cuda",
    [TT_DEV_META] = "meta",
};

const char *tt_device_name(tt_device d)
{
    return (unsigned)d < TT_DEVICE_COUNT ? device_names[d] : "?";
}

int tt_device_from_name(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < TT_DEVICE_COUNT; i++)
        if (strcmp(name, device_names[i]) == 0)
            return i;
    return -1;
}

void tt_value_clear(tt_value *v)
{
    if (!v)
        return;
    if (v->kind == TT_V_TENSOR) {
        tt_release(v->u.t);
    } else if (v->kind == TT_V_TENSORS) {
        /* A tensor-list result: the dispatcher allocated the array with
         * tt__malloc and handed us one reference per entry. */
        for (int i = 0; i < v->n; i++)
            tt_release(v->u.tensors[i]);
        tt__free((void *)v->u.tensors);
    }
    *v = tt_v_none();
}

int tt__format_double(double v, char *buf, size_t n)
{
    char tmp[40];
    if (isnan(v)) {
        snprintf(tmp, sizeof tmp, "nan");
    } else if (isinf(v)) {
        snprintf(tmp, sizeof tmp, "%s", v < 0 ? "-inf" : "inf");
    } else {
        /* Python's repr, which is what torch.library writes into a schema:
         * the fewest significant digits that read back exactly (17 always
         * do), in fixed notation for decimal exponents -4..15 and in
         * scientific notation otherwise ("1e-05", "0.1", "1000.0"). */
        int digits = 1;
        for (; digits < 17; digits++) {
            snprintf(tmp, sizeof tmp, "%.*e", digits - 1, v);
            if (strtod(tmp, NULL) == v)
                break;
        }
        snprintf(tmp, sizeof tmp, "%.*e", digits - 1, v);
        int exp10 = atoi(strchr(tmp, 'e') + 1);
        if (exp10 >= -4 && exp10 < 16) {
            int decimals = digits - 1 - exp10;
            snprintf(tmp, sizeof tmp, "%.*f", decimals > 0 ? decimals : 0, v);
            if (!strchr(tmp, '.'))
                strcat(tmp, ".0");
        }
    }
    return snprintf(buf, n, "%s", tmp);
}

const char *tt__dtype_schema_name(tt_dtype dt)
{
    switch (dt) {
    case TT_F32: return "float32";
    case TT_F64: return "float64";
    case TT_I64: return "int64";
    case TT_I32: return "int32";
    case TT_U8: return "uint8";
    case TT_BOOL: return "bool";
    default: return "?";
    }
}

int tt__dtype_scalar_type_code(tt_dtype dt)
{
    switch (dt) {
    case TT_U8: return 0;
    case TT_I32: return 3;
    case TT_I64: return 4;
    case TT_F32: return 6;
    case TT_F64: return 7;
    case TT_BOOL: return 11;
    default: return -1;
    }
}

/* A string value for a message: quoted, escaped, cut after 32 bytes. */
static void describe_str(const char *s, char *buf, size_t n)
{
    char q[160];
    size_t k = 0;
    int shown = 0;
    for (; *s && shown < 32 && k + 8 < sizeof q; s++, shown++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            q[k++] = '\\';
            q[k++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            k += (size_t)snprintf(q + k, sizeof q - k, "\\%03o", c);
        } else {
            q[k++] = (char)c;
        }
    }
    q[k] = '\0';
    snprintf(buf, n, "str \"%s\"%s", q, *s ? "..." : "");
}

char *tt_value_describe(const tt_value *v, char *buf, size_t n)
{
    if (!buf || n == 0)
        return buf;
    if (!v) {
        snprintf(buf, n, "NULL");
        return buf;
    }
    char tmp[256];
    switch (v->kind) {
    case TT_V_NONE:
        snprintf(buf, n, "None");
        break;
    case TT_V_TENSOR:
        if (v->u.t)
            snprintf(buf, n, "Tensor %s", tt_describe(v->u.t, tmp, sizeof tmp));
        else
            snprintf(buf, n, "None"); /* Tensor? passed as NULL */
        break;
    case TT_V_INT:
        if (tt_size_is_sym(v->u.i)) { /* a symbol by its name, never its handle */
            tt_size_str(v->u.i, tmp, sizeof tmp);
            snprintf(buf, n, "int %s", tmp);
        } else {
            snprintf(buf, n, "int %lld", (long long)v->u.i);
        }
        break;
    case TT_V_FLOAT:
        tt__format_double(v->u.f, tmp, sizeof tmp);
        snprintf(buf, n, "float %s", tmp);
        break;
    case TT_V_BOOL:
        snprintf(buf, n, "bool %s", v->u.b ? "true" : "false");
        break;
    case TT_V_STR:
        if (v->u.s)
            describe_str(v->u.s, buf, n);
        else
            snprintf(buf, n, "str NULL");
        break;
    case TT_V_DTYPE:
        snprintf(buf, n, "dtype %s", tt_dtype_name(v->u.dtype));
        break;
    case TT_V_DEVICE:
        snprintf(buf, n, "device %s", tt_device_name(v->u.device));
        break;
    case TT_V_INTS:
        snprintf(buf, n, "int[%d]", (int)v->n);
        break;
    case TT_V_FLOATS:
        snprintf(buf, n, "float[%d]", (int)v->n);
        break;
    case TT_V_BOOLS:
        snprintf(buf, n, "bool[%d]", (int)v->n);
        break;
    case TT_V_TENSORS:
        snprintf(buf, n, "Tensor[%d]", (int)v->n);
        break;
    default:
        snprintf(buf, n, "value of unknown kind %d", (int)v->kind);
        break;
    }
    return buf;
}
