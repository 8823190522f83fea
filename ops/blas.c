/* The BLAS underneath the matrix products: which kernels it runs, and how
 * many threads.
 *
 * Kernels. Debian's OpenBLAS is built for every x86-64 core (DYNAMIC_ARCH)
 * and picks its kernels in its own constructor, from the CPU model it
 * knows; 0.3.21 does not know newer AVX-512 CPUs and falls back to its
 * AVX2 (Haswell) kernels there, at half the machine's GEMM speed. The
 * user chooses with OPENBLAS_CORETYPE, which OpenBLAS reads in that same
 * constructor, before any code of ours runs. So when the library loads
 * (OpenBLAS's constructor has run: it is our dependency) and the user has
 * not chosen, the CPU has AVX-512 and OpenBLAS picked a core without it,
 * OpenBLAS is initialized again through its own entry points
 * (gotoblas_dynamic_quit / gotoblas_dynamic_init, looked up at run time
 * so that an OpenBLAS built for one core, without them, still links) with
 * OPENBLAS_CORETYPE=SkylakeX set for the duration of the call. Nothing has
 * called a BLAS routine yet, and OpenBLAS sizes its work buffers for every
 * core of a DYNAMIC_ARCH build, so the switch is the one OpenBLAS makes at
 * load time with the variable set. The alternatives measured: dlopen-ing
 * OpenBLAS after setting the variable cannot work once the program (or
 * anything it links) has loaded OpenBLAS already, as the bench does;
 * Debian's reference BLAS is ten times slower.
 *
 * Measured (sgemm n = 512, one core): on an AVX-512 machine OpenBLAS
 * 0.3.21 takes for Haswell, 116 GFLOP/s by default and 230 with SkylakeX
 * (issue 15's figures); on an AMD EPYC (Zen 4), which 0.3.21 already runs
 * as Cooperlake, 103-107 GFLOP/s with Cooperlake or SkylakeX kernels and
 * 106-112 with Haswell's (its AVX-512 units are double-pumped AVX2 ones),
 * so there OpenBLAS's own choice is kept.
 *
 * Threads. tt_set_num_threads sets OpenBLAS's thread count too (as
 * torch.set_num_threads sets its BLAS's), synchronized before each GEMM;
 * until it is called (or after tt_set_num_threads(0)) OpenBLAS keeps the
 * count it started with (OPENBLAS_NUM_THREADS, else the CPUs). */
#include "ops_impl.h"

#include <cblas.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char kernels[256] = "unknown";
static int blas_threads_at_load; /* OpenBLAS's own count, read at load */

/* OpenBLAS's core names with AVX-512 kernels (0.3.21 and later). */
static bool avx512_core(const char *name)
{
    static const char *const cores[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++)
        if (name && strcasecmp(name, cores[i]) == 0)
            return true;
    return false;
}

static bool cpu_avx512(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    /* The subsets OpenBLAS's SkylakeX kernels use; libgcc checks that the
     * OS saves the AVX-512 state too. */
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512cd");
#else
    return false;
#endif
}

static bool log_requested(void)
{
    const char *l = getenv("TT_LOG");
    return l && (strstr(l, "perf") || strstr(l, "blas") || strstr(l, "all"));
}

/* Chooses OpenBLAS's kernels (see the top of the file) and writes what
 * runs into `kernels`. */
__attribute__((constructor)) static void blas_select(void)
{
    blas_threads_at_load = openblas_get_num_threads();
    const char *user = getenv("OPENBLAS_CORETYPE");
    const char *core = openblas_get_corename();
    char detected[32];
    snprintf(detected, sizeof detected, "%s", core ? core : "unknown");
    const char *why;
    if (user && *user) {
        why = "chosen by OPENBLAS_CORETYPE";
    } else if (!cpu_avx512()) {
        why = "detected by OpenBLAS";
    } else if (avx512_core(detected)) {
        why = "detected by OpenBLAS; the CPU has AVX-512";
    } else {
        void (*quit)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit");
        void (*init)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init");
        why = "OpenBLAS detected a core without AVX-512 and cannot switch (not a "
              "DYNAMIC_ARCH build)";
        if (quit && init && setenv("OPENBLAS_CORETYPE", "SkylakeX", 1) == 0) {
            quit();
            init();
            unsetenv("OPENBLAS_CORETYPE");
            core = openblas_get_corename();
            why = avx512_core(core) ? "chosen by tensortrace: the CPU has AVX-512"
                                    : "tensortrace asked for SkylakeX, OpenBLAS refused";
        }
    }
    char *cfg = openblas_get_config();
    /* "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64":
     * the version is the second word. */
    char version[24] = "";
    if (cfg && strncmp(cfg, "OpenBLAS ", 9) == 0)
        sscanf(cfg + 9, "%23s", version);
    snprintf(kernels, sizeof kernels, "OpenBLAS %s, %s kernels (%s%s%s)", version,
             core ? core : "unknown", why,
             strcmp(detected, core ? core : "") != 0 ? "; OpenBLAS detected " : "",
             strcmp(detected, core ? core : "") != 0 ? detected : "");
    if (log_requested())
        fprintf(stderr, "[tt perf] BLAS: %s\n", kernels);
}

const char *tt_blas_kernels(void) { return kernels; }

void tt__blas_sync_threads(void)
{
    static atomic_int given; /* what we last gave OpenBLAS; 0: nothing */
    int n = tt__num_threads_set();
    n = n ? n : blas_threads_at_load;
    int g = atomic_load_explicit(&given, memory_order_relaxed);
    if ((g || n != blas_threads_at_load) && g != n) {
        openblas_set_num_threads(n);
        atomic_store_explicit(&given, n, memory_order_relaxed);
    }
}
