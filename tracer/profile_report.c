/* The profiler's reports (tt_profile.h): the summary table, the Chrome
 * trace Perfetto opens, the SVG timeline, and TT_PROFILE=file, which
 * writes them at exit. Above the recorder (profile.c), which plans call. */
#include "profile_impl.h"
#include "print_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *kind_name(tt_profile_kind k)
{
    switch (k) {
    case TT_PROFILE_OP: return "op";
    case TT_PROFILE_STEP: return "step";
    case TT_PROFILE_FUSED: return "fused";
    case TT_PROFILE_GEMM: return "gemm";
    case TT_PROFILE_CALL: return "compiled";
    case TT_PROFILE_COMPILE: return "compile";
    }
    return "?";
}

int64_t tt_profile_peak_bytes(const tt_profile *p, int *event)
{
    int at = -1;
    int64_t peak = p ? p->start_live : 0;
    for (int i = 0; p && i < p->n; i++)
        if (p->ev[i].live_bytes > peak) {
            peak = p->ev[i].live_bytes;
            at = i;
        }
    if (event)
        *event = at;
    return peak;
}

/* Each event's time without the events nested directly inside it. */
static int64_t *self_times(const tt_profile *p)
{
    int64_t *self = malloc(sizeof *self * (size_t)(p->n ? p->n : 1));
    int parent[64 + 1];
    for (int i = 0; self && i < p->n; i++) {
        const tt_profile_event *e = &p->ev[i];
        self[i] = e->dur_ns;
        parent[e->depth] = i;
        if (e->depth > 0)
            self[parent[e->depth - 1]] -= e->dur_ns;
    }
    return self;
}

/* "12.6 MB", "812 B" */
static const char *human(double v, const char *unit, char *buf, size_t n)
{
    static const char *prefix[] = {"", "K", "M", "G", "T", "P"};
    int k = 0;
    while (v >= 1000 && k < 5)
        v /= 1000, k++;
    snprintf(buf, n, k ? "%.1f %s%s" : "%.0f %s%s", v, prefix[k], unit);
    return buf;
}

typedef struct {
    const char *name;
    tt_profile_kind kind;
    int64_t calls, total, self, bytes, flops;
    bool bytes_known, flops_known;
} row;

static int by_total(const void *a, const void *b)
{
    const row *x = a, *y = b;
    return x->total < y->total ? 1 : x->total > y->total ? -1 : strcmp(x->name, y->name);
}

/* One row per (name, kind): names are interned, so a pointer is a name. */
static row *aggregate(const tt_profile *p, const int64_t *self, int *nrows)
{
    row *rows = calloc((size_t)(p->n ? p->n : 1), sizeof *rows);
    size_t cap = 64;
    while (cap < 2 * (size_t)p->n)
        cap *= 2;
    int *slot = malloc(sizeof *slot * cap);
    if (!rows || !slot) {
        free(rows), free(slot);
        return NULL;
    }
    memset(slot, -1, sizeof *slot * cap);
    int n = 0;
    for (int i = 0; i < p->n; i++) {
        const tt_profile_event *e = &p->ev[i];
        size_t h = ((uintptr_t)e->name >> 4 ^ (size_t)e->kind * 0x9e3779b9u) & (cap - 1);
        while (slot[h] >= 0 && (rows[slot[h]].name != e->name || rows[slot[h]].kind != e->kind))
            h = (h + 1) & (cap - 1);
        if (slot[h] < 0) {
            slot[h] = n;
            rows[n++] = (row){.name = e->name, .kind = e->kind};
        }
        row *r = &rows[slot[h]];
        r->calls++;
        r->total += e->dur_ns;
        r->self += self[i];
        if (e->bytes >= 0)
            r->bytes += e->bytes, r->bytes_known = true;
        if (e->flops >= 0)
            r->flops += e->flops, r->flops_known = true;
    }
    free(slot);
    qsort(rows, (size_t)n, sizeof *rows, by_total);
    *nrows = n;
    return rows;
}

/* The wall time the profile spans: its outermost events, end to end. */
static int64_t span_ns(const tt_profile *p)
{
    int64_t end = 0;
    for (int i = 0; i < p->n; i++)
        if (p->ev[i].start_ns + p->ev[i].dur_ns > end)
            end = p->ev[i].start_ns + p->ev[i].dur_ns;
    return end;
}

static void put_loc(sbuf *b, const tt_profile_event *e)
{
    if (e->loc.file)
        sb_printf(b, " at %s:%d", loc_basename(e->loc.file), e->loc.line);
}

char *tt_profile_table(const tt_profile *p, int max_rows)
{
    if (!p) {
        tt_error(TT_EINVAL, "tt_profile_table: argument 'profile' is NULL");
        return NULL;
    }
    int64_t *self = self_times(p);
    int nrows = 0;
    row *rows = self ? aggregate(p, self, &nrows) : NULL;
    sbuf b = {0};
    int64_t self_sum = 0;
    for (int i = 0; rows && i < nrows; i++)
        self_sum += rows[i].self;
    sb_printf(&b, "%-40s %-8s %6s %10s %10s %9s %6s %9s %8s %9s %8s\n", "Name", "Kind", "Calls",
              "Total ms", "Self ms", "Avg us", "Self%", "Bytes", "GB/s", "FLOPs", "GFLOP/s");
    int shown = max_rows > 0 && max_rows < nrows ? max_rows : nrows;
    for (int i = 0; rows && i < shown; i++) {
        const row *r = &rows[i];
        char name[41], bytes[16] = "-", bw[16] = "-", flops[16] = "-", rate[16] = "-";
        snprintf(name, sizeof name, "%s", r->name);
        double secs = (double)r->total * 1e-9;
        if (r->bytes_known) {
            human((double)r->bytes, "B", bytes, sizeof bytes);
            if (secs > 0)
                snprintf(bw, sizeof bw, "%.2f", (double)r->bytes / secs * 1e-9);
        }
        if (r->flops_known) {
            human((double)r->flops, "", flops, sizeof flops);
            if (secs > 0)
                snprintf(rate, sizeof rate, "%.2f", (double)r->flops / secs * 1e-9);
        }
        sb_printf(&b, "%-40s %-8s %6lld %10.3f %10.3f %9.1f %5.1f%% %9s %8s %9s %8s\n", name,
                  kind_name(r->kind), (long long)r->calls, (double)r->total * 1e-6,
                  (double)r->self * 1e-6, (double)r->total * 1e-3 / (double)r->calls,
                  self_sum ? 100.0 * (double)r->self / (double)self_sum : 0.0, bytes, bw, flops,
                  rate);
    }
    if (shown < nrows)
        sb_printf(&b, "(%d more rows)\n", nrows - shown);
    sb_printf(&b, "%d events over %.3f ms", p->n, (double)span_ns(p) * 1e-6);
    if (p->dropped)
        sb_printf(&b, "; %lld not recorded (out of memory, or nested more than 64 deep)",
                  (long long)p->dropped);
    sb_printf(&b, "\n");
    int at;
    int64_t peak = tt_profile_peak_bytes(p, &at);
    char a[16], c[16];
    sb_printf(&b, "Peak tensor storage: %s (%s at the start)", human((double)peak, "B", a, sizeof a),
              human((double)p->start_live, "B", c, sizeof c));
    if (at >= 0) {
        sb_printf(&b, ", after %s", p->ev[at].name);
        put_loc(&b, &p->ev[at]);
    }
    sb_printf(&b, "\n");
    /* Each compiled function's memory plan, once (its last call's). */
    for (int i = 0; i < p->n; i++) {
        const tt_profile_event *e = &p->ev[i];
        bool last = e->kind == TT_PROFILE_CALL;
        for (int j = i + 1; last && j < p->n; j++)
            last = !(p->ev[j].kind == TT_PROFILE_CALL && p->ev[j].name == e->name);
        if (!last)
            continue;
        if (e->planned_bytes > 0)
            sb_printf(&b, "%s: memory plan block %s holds %lld buffers that would take %s "
                          "unshared\n", e->name, human((double)e->planned_bytes, "B", a, sizeof a),
                      (long long)e->planned_buffers,
                      human((double)e->unshared_bytes, "B", c, sizeof c));
        else
            sb_printf(&b, "%s: no memory plan in use (recording, or switched off)\n", e->name);
    }
    free(rows);
    free(self);
    if (!self || !rows || b.oom) {
        free(b.s);
        tt_error(TT_ENOMEM, "tt_profile_table: out of memory");
        return NULL;
    }
    return b.s;
}

/* ------------------------------------------------------------ files */

/* s as the inside of a JSON string. */
static void put_json_str(FILE *f, const char *s)
{
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
}

/* s as XML text. */
static void put_xml(FILE *f, const char *s)
{
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c == '<')
            fputs("&lt;", f);
        else if (*c == '>')
            fputs("&gt;", f);
        else if (*c == '&')
            fputs("&amp;", f);
        else if (*c == '"')
            fputs("&quot;", f);
        else if (*c < 0x20)
            fputc(' ', f);
        else
            fputc(*c, f);
    }
}

static FILE *open_output(const char *fn, const tt_profile *p, const char *path)
{
    if (!p || !path) {
        tt_error(TT_EINVAL, "%s: argument '%s' is NULL", fn, p ? "path" : "profile");
        return NULL;
    }
    FILE *f = fopen(path, "w");
    if (!f)
        tt_error(TT_EINVAL, "%s: cannot write \"%s\": %s", fn, path, strerror(errno));
    return f;
}

static tt_status close_output(const char *fn, FILE *f, const char *path)
{
    bool bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return tt_error(TT_EINVAL, "%s: writing \"%s\" failed: %s", fn, path, strerror(errno));
    return TT_OK;
}

tt_status tt_profile_write_chrome(const tt_profile *p, const char *path)
{
    FILE *f = open_output("tt_profile_write_chrome", p, path);
    if (!f)
        return tt_errcode();
    long pid = (long)getpid();
    fprintf(f, "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
    fprintf(f, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %ld, \"tid\": %lld, "
               "\"args\": {\"name\": \"tensortrace\"}}", pid, (long long)p->thread);
    for (int i = 0; i < p->n; i++) {
        const tt_profile_event *e = &p->ev[i];
        fprintf(f, ",\n{\"ph\": \"X\", \"name\": \"");
        put_json_str(f, e->name);
        fprintf(f, "\", \"cat\": \"%s\", \"pid\": %ld, \"tid\": %lld, \"ts\": %.3f, "
                   "\"dur\": %.3f, \"args\": {", kind_name(e->kind), pid, (long long)e->thread,
                (double)e->start_ns * 1e-3, (double)e->dur_ns * 1e-3);
        fprintf(f, "\"live_bytes\": %lld", (long long)e->live_bytes);
        if (e->bytes >= 0)
            fprintf(f, ", \"bytes\": %lld", (long long)e->bytes);
        if (e->flops >= 0)
            fprintf(f, ", \"flops\": %lld", (long long)e->flops);
        if (e->loc.file) {
            fprintf(f, ", \"source\": \"");
            put_json_str(f, e->loc.file);
            fprintf(f, ":%d\"", e->loc.line);
        }
        if (e->loc.func) {
            fprintf(f, ", \"function\": \"");
            put_json_str(f, e->loc.func);
            fprintf(f, "\"");
        }
        if (e->node) {
            fprintf(f, ", \"node\": \"");
            put_json_str(f, e->node);
            fprintf(f, "\"");
        }
        if (e->kind == TT_PROFILE_CALL)
            fprintf(f, ", \"planned_bytes\": %lld, \"planned_buffers\": %lld, "
                       "\"unshared_bytes\": %lld", (long long)e->planned_bytes,
                    (long long)e->planned_buffers, (long long)e->unshared_bytes);
        fprintf(f, "}}");
        /* The live bytes as a counter track, sampled where each event ends. */
        fprintf(f, ",\n{\"ph\": \"C\", \"name\": \"live tensor bytes\", \"pid\": %ld, "
                   "\"ts\": %.3f, \"args\": {\"bytes\": %lld}}", pid,
                (double)(e->start_ns + e->dur_ns) * 1e-3, (long long)e->live_bytes);
    }
    fprintf(f, "\n]}\n");
    return close_output("tt_profile_write_chrome", f, path);
}

/* The SVG timeline's geometry. */
enum { SVG_WIDTH = 1200, SVG_MARGIN = 10, ROW_H = 18, BAND_GAP = 24, MEM_H = 60 };

static const char *kind_colour(tt_profile_kind k)
{
    switch (k) {
    case TT_PROFILE_OP: return "#8fb8de";
    case TT_PROFILE_STEP: return "#a5d6a7";
    case TT_PROFILE_FUSED: return "#ffcc80";
    case TT_PROFILE_GEMM: return "#ef9a9a";
    case TT_PROFILE_CALL: return "#ce93d8";
    case TT_PROFILE_COMPILE: return "#bdbdbd";
    }
    return "#eeeeee";
}

typedef struct {
    int64_t end, live;
} mem_point;

static int by_end(const void *a, const void *b)
{
    const mem_point *x = a, *y = b;
    return (x->end > y->end) - (x->end < y->end);
}

tt_status tt_profile_write_svg(const tt_profile *p, const char *path)
{
    FILE *f = open_output("tt_profile_write_svg", p, path);
    if (!f)
        return tt_errcode();
    /* Bands: one per thread, as deep as its deepest event. */
    int64_t threads[16];
    int depth[16] = {0}, nthreads = 0;
    for (int i = 0; i < p->n; i++) {
        int t = 0;
        while (t < nthreads && threads[t] != p->ev[i].thread)
            t++;
        if (t == nthreads && nthreads < 16)
            threads[nthreads++] = p->ev[i].thread;
        if (t < nthreads && p->ev[i].depth + 1 > depth[t])
            depth[t] = p->ev[i].depth + 1;
    }
    int band_top[16], y = SVG_MARGIN + 20;
    for (int t = 0; t < nthreads; t++) {
        band_top[t] = y + 14;
        y = band_top[t] + depth[t] * ROW_H + BAND_GAP;
    }
    int mem_top = y + 14, height = mem_top + MEM_H + SVG_MARGIN + 16;
    double span = (double)(span_ns(p) ? span_ns(p) : 1);
    double scale = (SVG_WIDTH - 2 * SVG_MARGIN) / span;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "font-family=\"Helvetica, sans-serif\" font-size=\"11\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
               "<text x=\"%d\" y=\"%d\" font-size=\"13\">tensortrace profile: %d events over "
               "%.3f ms</text>\n",
            SVG_WIDTH, height, SVG_MARGIN, SVG_MARGIN + 12, p->n, span * 1e-6);
    for (int t = 0; t < nthreads; t++)
        fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#555\">thread %lld</text>\n", SVG_MARGIN,
                band_top[t] - 3, (long long)threads[t]);
    for (int i = 0; i < p->n; i++) {
        const tt_profile_event *e = &p->ev[i];
        int t = 0;
        while (t < nthreads && threads[t] != e->thread)
            t++;
        if (t == nthreads)
            continue;
        double x = SVG_MARGIN + (double)e->start_ns * scale, w = (double)e->dur_ns * scale;
        if (w < 0.5)
            w = 0.5;
        int ry = band_top[t] + e->depth * ROW_H;
        fprintf(f, "<g><title>");
        put_xml(f, e->name);
        fprintf(f, " (%s): %.3f us", kind_name(e->kind), (double)e->dur_ns * 1e-3);
        if (e->loc.file) {
            fprintf(f, ", ");
            put_xml(f, e->loc.file);
            fprintf(f, ":%d", e->loc.line);
        }
        if (e->node) {
            fprintf(f, ", node ");
            put_xml(f, e->node);
        }
        fprintf(f, "</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                   "stroke=\"white\" stroke-width=\"0.5\"/>",
                x, ry, w, ROW_H - 2, kind_colour(e->kind));
        /* A label where about six characters fit, cut to the box. */
        int fits = (int)(w / 6.5);
        if (fits >= 6) {
            char label[128];
            snprintf(label, sizeof label, "%s", e->name);
            if ((int)strlen(label) > fits)
                label[fits] = '\0';
            fprintf(f, "<text x=\"%.2f\" y=\"%d\" clip-path=\"none\">", x + 2, ry + ROW_H - 6);
            put_xml(f, label);
            fprintf(f, "</text>");
        }
        fprintf(f, "</g>\n");
    }
    /* Live tensor bytes, a step line under the bands. */
    int64_t peak = tt_profile_peak_bytes(p, NULL);
    char a[16];
    fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#555\">live tensor storage (peak %s)</text>\n",
            SVG_MARGIN, mem_top - 3, human((double)peak, "B", a, sizeof a));
    /* Sampled where each event ends: in the order they end. */
    mem_point *pts = malloc(sizeof *pts * (size_t)(p->n ? p->n : 1));
    for (int i = 0; pts && i < p->n; i++)
        pts[i] = (mem_point){p->ev[i].start_ns + p->ev[i].dur_ns, p->ev[i].live_bytes};
    if (pts)
        qsort(pts, (size_t)p->n, sizeof *pts, by_end);
    fprintf(f, "<polyline fill=\"none\" stroke=\"#1565c0\" points=\"%d,%.1f", SVG_MARGIN,
            mem_top + MEM_H - (peak ? (double)MEM_H * (double)p->start_live / (double)peak : 0));
    for (int i = 0; pts && i < p->n; i++)
        fprintf(f, " %.1f,%.1f", SVG_MARGIN + (double)pts[i].end * scale,
                mem_top + MEM_H - (peak ? (double)MEM_H * (double)pts[i].live / (double)peak : 0));
    free(pts);
    fprintf(f, "\"/>\n</svg>\n");
    return close_output("tt_profile_write_svg", f, path);
}

/* ----------------------------------------------------- TT_PROFILE=file */

static char *env_path;

static void profile_at_exit(void)
{
    tt_profile *p = tt_profile_end();
    if (!p) {
        fprintf(stderr, "tensortrace: TT_PROFILE: nothing written: %s\n", tt_errmsg());
    } else if (tt_profile_write_chrome(p, env_path)) {
        fprintf(stderr, "tensortrace: TT_PROFILE: %s\n", tt_errmsg());
    } else {
        char *table = tt_profile_table(p, 30);
        fprintf(stderr, "tensortrace: profile of %d events written to %s\n%s",
                tt_profile_num_events(p), env_path, table ? table : "");
        free(table);
    }
    tt_profile_free(p);
    free(env_path);
}

/* The thread that loads the library is profiled until exit (which must
 * then come from it: another thread's exit says so and writes nothing). */
__attribute__((constructor)) static void profile_from_environment(void)
{
    const char *path = getenv("TT_PROFILE");
    if (!path || !*path)
        return;
    if (!(env_path = strdup(path)) || tt_profile_begin()) {
        fprintf(stderr, "tensortrace: TT_PROFILE: cannot start the profiler: %s\n",
                env_path ? tt_errmsg() : "out of memory");
        free(env_path);
        return;
    }
    atexit(profile_at_exit);
}
