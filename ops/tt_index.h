/* tensortrace built-in ops for indexing, scatter, sorting and scans: typed
 * C wrappers with PyTorch's names and argument forms.
 *
 * Conventions are tt_ops.h's: results are new references (NULL + error on
 * failure), arguments are borrowed, dims may be negative; with no mode,
 * gradient or fake tensor in play a wrapper runs its kernel directly,
 * otherwise it goes through the dispatcher.
 */
#ifndef TT_INDEX_H
#define TT_INDEX_H

#include "tt_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the public API: see tt_runtime.h */

/* ------------------------------------- gather, scatter, index_select */

/* ------------------------------------------ advanced indexing, masks */

/* ------------------------------------- sorting, selection, scans */

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* TT_INDEX_H */
