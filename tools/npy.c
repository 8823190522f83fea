/* .npy files: a 10-byte preamble (magic, version 1.0, header length), a
 * header that is a Python dict literal padded with spaces to a multiple of
 * 64 bytes and ended by a newline, then the elements in C order. */
#include "npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *descr(tt_dtype dt)
{
    switch (dt) {
    case TT_F32: return "<f4";
    case TT_F64: return "<f8";
    case TT_I64: return "<i8";
    case TT_I32: return "<i4";
    case TT_U8: return "|u1";
    case TT_BOOL: return "|b1";
    default: return NULL;
    }
}

tt_status tt_npy_write(const tt_tensor *t, const char *path)
{
    if (!t || !path)
        return tt_error(TT_EINVAL, "tt_npy_write: expects a tensor and a path, got NULL");
    if (tt_is_fake(t))
        return tt_error(TT_EFAKE, "tt_npy_write: '%s': a fake tensor has no values to write",
                        path);
    const char *d = descr(tt_dtype_of(t));
    if (!d)
        return tt_error(TT_EDTYPE, "tt_npy_write: '%s': no .npy type for %s", path,
                        tt_dtype_name(tt_dtype_of(t)));
    /* The shape as a Python tuple: "()" for 0-dim, "(5,)" for one dim. */
    char shape[TT_MAX_DIMS * 24 + 4] = "(";
    size_t len = 1;
    for (int i = 0; i < tt_ndim(t); i++) {
        tt_size s = tt_dim_size(t, i);
        if (tt_size_is_sym(s))
            return tt_error(TT_EINVAL, "tt_npy_write: '%s': dim %d has a symbolic size", path, i);
        len += (size_t)snprintf(shape + len, sizeof shape - len, "%lld%s", (long long)s,
                                tt_ndim(t) == 1 ? "," : i + 1 < tt_ndim(t) ? ", " : "");
    }
    snprintf(shape + len, sizeof shape - len, ")");

    char header[sizeof shape + 128];
    int n = snprintf(header, sizeof header,
                     "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", d, shape);
    /* Pad so that preamble + header (with its newline) is a multiple of 64. */
    size_t total = 10 + (size_t)n + 1, pad = (64 - total % 64) % 64;
    memset(header + n, ' ', pad);
    header[(size_t)n + pad] = '\n';
    size_t hlen = (size_t)n + pad + 1;

    size_t nbytes = (size_t)tt_numel(t) * tt_dtype_size(tt_dtype_of(t));
    void *data = malloc(nbytes ? nbytes : 1);
    if (!data)
        return tt_error(TT_ENOMEM, "tt_npy_write: '%s': out of memory for %zu bytes", path,
                        nbytes);
    tt_status st = tt_to_buffer(t, data, nbytes); /* C order, whatever the strides */
    if (st) {
        free(data);
        return st;
    }
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, hlen, f) == hlen &&
              fwrite(data, 1, nbytes, f) == nbytes;
    int err = errno;
    if (f && fclose(f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    free(data);
    if (!ok)
        return tt_error(TT_EINTERNAL, "tt_npy_write: cannot write '%s': %s", path, strerror(err));
    return TT_OK;
}
