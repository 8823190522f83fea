/* A one-line progress bar on stderr for long loops (training steps,
 * generated tokens, exports), as tqdm draws:
 *
 *     train [########............] 120/400 30% 12.3 it/s ETA 0:23 loss 0.512
 *
 * It draws only when stderr is a terminal, the environment does not say
 * TT_PROGRESS=0 and the caller did not ask for quiet, so logs and pipes
 * get nothing; it redraws at most ten times a second and fits the line
 * to COLUMNS (else the terminal's width, else 80). A bar belongs to one
 * thread at a time. */
#ifndef TT_PROGRESS_H
#define TT_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default) /* the public API: see tt_runtime.h */

/* ---------------------------------------------------- progress bars */

typedef struct tt_progress tt_progress;

/* Flags of tt_progress_begin. TT_PROGRESS_QUIET: draw nothing (a
 * program's -q). */
#define TT_PROGRESS_QUIET 1u
/* TT_PROGRESS_FORCE: draw even when stderr is no terminal (tests); the
 * environment's TT_PROGRESS=0 still wins. */
#define TT_PROGRESS_FORCE 2u
/* TT_PROGRESS_DELAYED: draw nothing for the first half second, so work
 * that ends sooner (most compiles) leaves no line behind. */
#define TT_PROGRESS_DELAYED 4u

/* A new bar of `total` items (0: unknown, then the count and rate only),
 * drawn at once when it draws; label may be NULL. Returns the caller's
 * bar, or NULL with TT_EINVAL (a negative total, an unknown flag) or
 * TT_ENOMEM. */
tt_progress *tt_progress_begin(const char *label, int64_t total, unsigned flags);

/* done items so far, and text for the end of the line ("loss 0.512";
 * NULL: none; copied). Redraws when a tenth of a second has passed since
 * the last draw. Does nothing on a NULL bar. */
void tt_progress_update(tt_progress *p, int64_t done, const char *extra);

/* Draws the last state and ends the line, when the bar drew anything,
 * then frees p. Accepts NULL; returns NULL. */
tt_progress *tt_progress_end(tt_progress *p);

/* Whether p draws (false for NULL): a program that prints a line per
 * step can leave it out while the bar shows the same on the terminal. */
bool tt_progress_visible(const tt_progress *p);

/* The line p draws when `elapsed_s` seconds have passed since its begin,
 * written into buf as snprintf does (truncated to n - 1 characters);
 * returns the line's length. For tests: no clock and no terminal. */
size_t tt_progress_format(const tt_progress *p, double elapsed_s, char *buf, size_t n);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
