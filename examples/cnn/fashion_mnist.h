/* Fashion-MNIST (Debian's dataset-fashion-mnist): 28x28 grey images of
 * clothes in 10 classes, 60,000 for training and 10,000 for testing, in
 * the IDX format, gzip'ed. */
#ifndef FASHION_MNIST_H
#define FASHION_MNIST_H

#include <stdint.h>
#include <tensortrace.h>

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"
#define FMNIST_SIDE 28
#define FMNIST_CLASSES 10

extern const char *const fmnist_class_names[FMNIST_CLASSES];

typedef struct {
    int64_t n;       /* images */
    uint8_t *pixels; /* n * 28 * 28, row-major, 0 (background) .. 255 */
    uint8_t *labels; /* n, each < 10 */
} fmnist_set;

/* Reads "train" or "t10k" from dir (NULL: FMNIST_DIR), at most max images
 * (0: all). A missing or malformed file is an error naming it. */
tt_status fmnist_load(const char *dir, const char *which, int64_t max, fmnist_set *out);
void fmnist_free(fmnist_set *s);

/* Copies images [first, first + n) into x (f32 [n, 1, 28, 28], normalized
 * with the training set's mean and standard deviation, as torchvision's
 * Normalize((0.2860,), (0.3530,)) does) and their labels into y (i64 [n]);
 * order[] (may be NULL) maps batch positions to image indices. */
tt_status fmnist_batch(const fmnist_set *s, const int64_t *order, int64_t first, int64_t n,
                       tt_tensor *x, tt_tensor *y);

#endif
