/* Reads Fashion-MNIST's IDX files through zlib (they are gzip'ed). */
#include "fashion_mnist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

const char *const fmnist_class_names[FMNIST_CLASSES] = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

/* IDX: a big-endian magic (0x0801: u8 vector, 0x0803: u8 3-d array), the
 * sizes (big-endian u32 each), then the bytes. */
static tt_status read_idx(const char *path, uint32_t magic, int nsizes, uint32_t *sizes,
                          int64_t max, uint8_t **data)
{
    gzFile f = gzopen(path, "rb");
    if (!f)
        return tt_error(TT_EINVAL, "%s: cannot open (is dataset-fashion-mnist installed?)", path);
    unsigned char head[16];
    int need = 4 * (1 + nsizes);
    tt_status st = TT_OK;
    if (gzread(f, head, (unsigned)need) != need) {
        st = tt_error(TT_EINVAL, "%s: truncated header", path);
        goto out;
    }
    uint32_t got = (uint32_t)head[0] << 24 | (uint32_t)head[1] << 16 | head[2] << 8 | head[3];
    if (got != magic) {
        st = tt_error(TT_EINVAL, "%s: not an IDX file of this kind (magic 0x%08x, expected "
                              "0x%08x)", path, got, magic);
        goto out;
    }
    size_t item = 1;
    for (int i = 0; i < nsizes; i++) {
        const unsigned char *p = head + 4 * (i + 1);
        sizes[i] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (i > 0)
            item *= sizes[i];
    }
    if (max > 0 && sizes[0] > max)
        sizes[0] = (uint32_t)max;
    size_t bytes = item * sizes[0];
    *data = malloc(bytes ? bytes : 1);
    if (!*data) {
        st = tt_error(TT_ENOMEM, "%s: out of memory for %zu bytes", path, bytes);
        goto out;
    }
    if ((size_t)gzread(f, *data, (unsigned)bytes) != bytes) {
        free(*data);
        *data = NULL;
        st = tt_error(TT_EINVAL, "%s: truncated: fewer than the %zu bytes its header says", path,
                      bytes);
    }
out:
    gzclose(f);
    return st;
}

tt_status fmnist_load(const char *dir, const char *which, int64_t max, fmnist_set *out)
{
    char path[4096];
    uint32_t isz[3] = {0}, lsz[1] = {0};
    memset(out, 0, sizeof *out);
    dir = dir ? dir : FMNIST_DIR;
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", dir, which);
    tt_status st = read_idx(path, 0x803, 3, isz, max, &out->pixels);
    if (!st && (isz[1] != FMNIST_SIDE || isz[2] != FMNIST_SIDE))
        st = tt_error(TT_EINVAL, "%s: images are %ux%u, expected 28x28", path, isz[1], isz[2]);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", dir, which);
    if (!st)
        st = read_idx(path, 0x801, 1, lsz, max, &out->labels);
    if (!st && lsz[0] != isz[0])
        st = tt_error(TT_EINVAL, "%s: %u labels for %u images", path, lsz[0], isz[0]);
    for (uint32_t i = 0; !st && i < lsz[0]; i++)
        if (out->labels[i] >= FMNIST_CLASSES)
            st = tt_error(TT_EINVAL, "%s: label %u of image %u is not a class", path,
                          out->labels[i], i);
    if (st) {
        fmnist_free(out);
        return st;
    }
    out->n = isz[0];
    return TT_OK;
}

void fmnist_free(fmnist_set *s)
{
    free(s->pixels);
    free(s->labels);
    memset(s, 0, sizeof *s);
}

tt_status fmnist_batch(const fmnist_set *s, const int64_t *order, int64_t first, int64_t n,
                       tt_tensor *x, tt_tensor *y)
{
    const int64_t px = FMNIST_SIDE * FMNIST_SIDE;
    float *xd = tt_data(x);
    int64_t *yd = tt_data(y);
    if (!xd || !yd)
        return tt_errcode();
    for (int64_t i = 0; i < n; i++) {
        int64_t k = order ? order[first + i] : first + i;
        const uint8_t *p = s->pixels + k * px;
        for (int64_t j = 0; j < px; j++)
            xd[i * px + j] = ((float)p[j] / 255.0f - 0.2860f) / 0.3530f;
        yd[i] = s->labels[k];
    }
    return TT_OK;
}
