/* The progress bar of tt_progress.h. Formatting is a pure function of the
 * bar's state and the elapsed time (tt_progress_format), so tests check
 * the text without a terminal; drawing adds the clock, the throttle and
 * the padding that covers a longer line drawn before. */
#include "tt_progress.h"
#include "tensor_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

/* The bar takes a third of the line, shrinking only when the text needs
 * the room, and the count and percentage are padded: redrawn in place,
 * the line does not jitter as the numbers grow. */
#define MAX_BAR 40    /* a wider bar tells nothing more */
#define MIN_BAR 5     /* below that the bar is left out */
#define MAX_LINE 1023 /* the widest line drawn, whatever COLUMNS says */
#define REDRAW_S 0.1
#define DELAY_S 0.5 /* TT_PROGRESS_DELAYED */

struct tt_progress {
    int64_t total, done;
    bool visible, drew;
    int width;            /* the longest line: the columns but one, so it never wraps */
    double t0, last_draw; /* CLOCK_MONOTONIC seconds */
    double first_draw;    /* not before then (TT_PROGRESS_DELAYED) */
    size_t last_len;      /* of the line on screen: a shorter one is padded over it */
    char extra[256];
    char label[];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Copies s into dst (n bytes, NUL included), with control characters as
 * spaces: a newline or a \r in a loss text would break the one line. */
static void copy_clean(char *dst, size_t n, const char *s)
{
    size_t i = 0;
    for (; s && s[i] && i + 1 < n; i++)
        dst[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
    dst[i] = '\0';
}

/* COLUMNS first (a test or a user fixes it), then the terminal's own. */
static int columns(void)
{
    const char *env = getenv("COLUMNS");
    char *end;
    long c = env ? strtol(env, &end, 10) : 0;
    if (!env || *end || c <= 0) {
        struct winsize ws;
        c = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
    }
    return c > MAX_LINE + 1 ? MAX_LINE + 1 : (int)c;
}

tt_progress *tt_progress_begin(const char *label, int64_t total, unsigned flags)
{
    if (total < 0) {
        tt_error(TT_EINVAL, "tt_progress_begin: argument 'total' expects a count >= 0 (0: "
                            "unknown), got %lld", (long long)total);
        return NULL;
    }
    const unsigned known = TT_PROGRESS_QUIET | TT_PROGRESS_FORCE | TT_PROGRESS_DELAYED;
    if (flags & ~known) {
        tt_error(TT_EINVAL, "tt_progress_begin: argument 'flags' has unknown bits 0x%x "
                            "(expected TT_PROGRESS_QUIET, TT_PROGRESS_FORCE, "
                            "TT_PROGRESS_DELAYED)", flags & ~known);
        return NULL;
    }
    size_t len = label ? strlen(label) : 0;
    tt_progress *p = tt__malloc(sizeof *p + len + 1);
    if (!p) {
        tt_error(TT_ENOMEM, "tt_progress_begin: out of memory");
        return NULL;
    }
    const char *env = getenv("TT_PROGRESS");
    *p = (tt_progress){.total = total, .width = columns() - 1, .t0 = now_s()};
    p->first_draw = p->t0 + (flags & TT_PROGRESS_DELAYED ? DELAY_S : 0);
    p->visible = !(flags & TT_PROGRESS_QUIET) && !(env && !strcmp(env, "0")) &&
                 ((flags & TT_PROGRESS_FORCE) || isatty(STDERR_FILENO));
    copy_clean(p->label, len + 1, label);
    /* Drawn at once: the first step of a compiled loop traces, and may be
     * the longest. */
    if (p->visible && !(flags & TT_PROGRESS_DELAYED))
        tt_progress_update(p, 0, NULL);
    return p;
}

/* "M:SS" under an hour, "H:MM:SS" from one on. */
static void clock_text(char *b, size_t n, double s)
{
    long long t = llround(s);
    if (t < 3600)
        snprintf(b, n, "%lld:%02lld", t / 60, t % 60);
    else
        snprintf(b, n, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
}

/* "12.3 it/s", "250 it/s", "2.5 s/it" for slow steps, "? it/s" before any. */
static void rate_text(char *b, size_t n, double rate)
{
    if (!(rate > 0) || !isfinite(rate))
        snprintf(b, n, "? it/s");
    else if (rate < 1)
        snprintf(b, n, "%.1f s/it", 1 / rate);
    else
        snprintf(b, n, rate < 100 ? "%.1f it/s" : "%.0f it/s", rate);
}

/* Appends up to k bytes of s to line (MAX_LINE + 1 bytes at most: one
 * past the widest, so a cut can see whether it splits a character). */
static void append(char *line, size_t *len, const char *s, size_t k)
{
    size_t room = MAX_LINE + 1 - *len;
    k = k < room ? k : room;
    memcpy(line + *len, s, k);
    *len += k;
}

size_t tt_progress_format(const tt_progress *p, double elapsed_s, char *buf, size_t n)
{
    char line[MAX_LINE + 2], tail[MAX_LINE + 1], rate[32], when[40] = "";
    if (!p) {
        if (n)
            buf[0] = '\0';
        return 0;
    }
    double t = elapsed_s > 0 && isfinite(elapsed_s) ? elapsed_s : 0;
    double r = t > 0 ? (double)p->done / t : 0;
    rate_text(rate, sizeof rate, r);
    if (p->total > 0 && p->done >= p->total) {
        strcpy(when, " in ");
        clock_text(when + 4, sizeof when - 4, t);
    } else if (p->total > 0) {
        double eta = r > 0 ? (double)(p->total - p->done) / r : INFINITY;
        strcpy(when, " ETA ");
        if (eta < 1e9)
            clock_text(when + 5, sizeof when - 5, eta);
        else
            strcpy(when + 5, "?");
    }
    if (p->total > 0) {
        int pct = p->done >= p->total ? 100 : (int)((double)p->done * 100 / (double)p->total);
        int digits = snprintf(NULL, 0, "%lld", (long long)p->total);
        snprintf(tail, sizeof tail, "%*lld/%lld %3d%% %s%s%s%s", digits, (long long)p->done,
                 (long long)p->total, pct, rate, when, p->extra[0] ? " " : "", p->extra);
    } else {
        snprintf(tail, sizeof tail, "%lld %s%s%s", (long long)p->done, rate,
                 p->extra[0] ? " " : "", p->extra);
    }
    size_t head = strlen(p->label), len = 0;
    long room = (long)p->width - (long)(head ? head + 1 : 0) - (long)strlen(tail) - 3;
    long bar = p->width / 3 < MAX_BAR ? p->width / 3 : MAX_BAR;
    bar = p->total == 0 ? 0 : room < bar ? room : bar;
    append(line, &len, p->label, head);
    append(line, &len, " ", head ? 1 : 0);
    if (bar >= MIN_BAR) {
        size_t fill = p->done >= p->total
                          ? (size_t)bar
                          : (size_t)((double)p->done * (double)bar / (double)p->total);
        append(line, &len, "[", 1);
        append(line, &len, "########################################", fill);
        append(line, &len, "........................................", (size_t)bar - fill);
        append(line, &len, "] ", 2);
    }
    append(line, &len, tail, strlen(tail));
    line[len] = '\0';
    if (len > (size_t)p->width) {
        len = (size_t)p->width;
        while (len > 0 && ((unsigned char)line[len] & 0xc0) == 0x80)
            len--; /* not in the middle of a UTF-8 character */
        line[len] = '\0';
    }
    if (n)
        snprintf(buf, n, "%s", line);
    return len;
}

static void draw(tt_progress *p, double now)
{
    char out[2 * MAX_LINE + 2];
    out[0] = '\r';
    size_t len = tt_progress_format(p, now - p->t0, out + 1, MAX_LINE + 1);
    size_t pad = p->last_len > len ? p->last_len - len : 0;
    memset(out + 1 + len, ' ', pad);
    fwrite(out, 1, 1 + len + pad, stderr);
    fflush(stderr);
    p->last_len = len;
    p->last_draw = now;
    p->drew = true;
}

void tt_progress_update(tt_progress *p, int64_t done, const char *extra)
{
    if (!p)
        return;
    p->done = done > 0 ? done : 0;
    copy_clean(p->extra, sizeof p->extra, extra);
    if (!p->visible)
        return;
    double now = now_s();
    if (now >= p->first_draw && (!p->drew || now - p->last_draw >= REDRAW_S))
        draw(p, now);
}

tt_progress *tt_progress_end(tt_progress *p)
{
    if (p && p->drew) {
        draw(p, now_s());
        fputc('\n', stderr);
        fflush(stderr);
    }
    tt__free(p);
    return NULL;
}

bool tt_progress_visible(const tt_progress *p)
{
    return p && p->visible;
}
