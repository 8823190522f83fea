/* Shared by the fuzz targets: the input as a C string, and the check that
 * turns a broken promise into a crash libFuzzer reports (with the input
 * that caused it). Fuzz targets are test programs: aborting is how they
 * report, never how the library does. */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include "tensortrace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond, ...)                                                  \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: broken promise: ", __FILE__, __LINE__);    \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            abort();                                                           \
        }                                                                      \
    } while (0)

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* The input up to its first NUL, NUL-terminated (malloc'd; free it). */
static inline char *fuzz_cstr(const unsigned char *data, size_t size)
{
    char *s = malloc(size + 1);
    FUZZ_CHECK(s, "out of memory");
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* The canonical text of s (malloc'd; free it). */
static inline char *fuzz_schema_str(const tt_schema *s)
{
    int n = tt_schema_print(s, NULL, 0);
    FUZZ_CHECK(n >= 0, "tt_schema_print returned %d", n);
    char *buf = malloc((size_t)n + 1);
    FUZZ_CHECK(buf, "out of memory");
    int m = tt_schema_print(s, buf, (size_t)n + 1);
    FUZZ_CHECK(m == n && strlen(buf) == (size_t)n,
               "tt_schema_print measured %d bytes, then wrote %d (%zu)", n, m, strlen(buf));
    return buf;
}

#endif /* FUZZ_UTIL_H */
