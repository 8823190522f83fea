/* TT_LOG: what compile and explain did, one line per event on stderr, as
 * PyTorch's TORCH_LOGS. Topics are bits of one process-wide mask, read
 * from the environment once (the first time anything asks) unless
 * tt_set_log set it first; writes to the stream take its lock, so lines
 * from several threads do not interleave. */
#include "trace_impl.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define TOPICS(X)                                                              \
    X(TT_LOG_GRAPH_BREAKS, "graph_breaks")                                     \
    X(TT_LOG_GUARDS, "guards")                                                 \
    X(TT_LOG_RECOMPILES, "recompiles")                                         \
    X(TT_LOG_GRAPH, "graph")                                                   \
    X(TT_LOG_PLAN, "plan")                                                     \
    X(TT_LOG_PERF, "perf")

static const struct {
    unsigned bit;
    const char *name;
} topics[] = {
#define ROW(bit, name) {bit, name},
    TOPICS(ROW)
#undef ROW
};
#define NTOPICS (sizeof topics / sizeof topics[0])

static atomic_uint mask;
static atomic_bool env_read;
static FILE *_Atomic stream;

/* The mask for a comma list; false (with *bad the unknown word) when a
 * word names no topic. "all" is every topic. */
static bool parse(const char *s, unsigned *out, char *bad, size_t nbad)
{
    unsigned m = 0;
    while (s && *s) {
        size_t n = strcspn(s, ",");
        while (n && (*s == ' ' || *s == '+')) /* "graph, guards", "+guards" */
            s++, n--;
        bool found = n == 0;
        if (n == 3 && strncmp(s, "all", 3) == 0) {
            for (size_t i = 0; i < NTOPICS; i++)
                m |= topics[i].bit;
            found = true;
        }
        for (size_t i = 0; !found && i < NTOPICS; i++)
            if (strlen(topics[i].name) == n && strncmp(s, topics[i].name, n) == 0) {
                m |= topics[i].bit;
                found = true;
            }
        if (!found) {
            snprintf(bad, nbad, "%.*s", (int)n, s);
            return false;
        }
        s += n;
        if (*s == ',')
            s++;
    }
    *out = m;
    return true;
}

static void read_env(void)
{
    if (atomic_exchange(&env_read, true))
        return;
    const char *env = getenv("TT_LOG");
    unsigned m;
    char bad[64];
    if (!env)
        return;
    if (parse(env, &m, bad, sizeof bad))
        atomic_store(&mask, m);
    else /* a typo must not pass silently, nor fail the program */
        tt__log(0, "warning: TT_LOG: '%s' is no topic (topics: graph_breaks, guards, "
                   "recompiles, graph, plan, perf, all); logging stays off", bad);
}

tt_status tt_set_log(const char *list)
{
    unsigned m = 0;
    char bad[64];
    atomic_store(&env_read, true); /* the call wins over the environment */
    if (!parse(list, &m, bad, sizeof bad))
        return tt_error(TT_EINVAL, "tt_set_log: argument 'topics' names '%s', which is no "
                                   "topic (topics: graph_breaks, guards, recompiles, graph, "
                                   "plan, perf, all)", bad);
    atomic_store(&mask, m);
    return TT_OK;
}

void tt_set_log_stream(FILE *f) { atomic_store(&stream, f); }

bool tt__log_on(unsigned topic)
{
    read_env();
    return (atomic_load(&mask) & topic) != 0;
}

void tt__log(unsigned topic, const char *fmt, ...)
{
    if (topic && !tt__log_on(topic))
        return;
    FILE *f = atomic_load(&stream);
    if (!f)
        f = stderr;
    va_list ap;
    va_start(ap, fmt);
    flockfile(f);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    fflush(f);
    funlockfile(f);
    va_end(ap);
}
