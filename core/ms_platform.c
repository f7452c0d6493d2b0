/*  =========================================================================
    ms_platform - platform facts for the backend fingerprint

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#define _GNU_SOURCE
#include "ms_platform.h"

#include "ms_clock.h"
#include <sched.h>
#include <unistd.h>

#include <cblas.h>
#include <stdbool.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef MESHSWEEP_VERSION
#define MESHSWEEP_VERSION "unknown"
#endif
#ifndef MESHSWEEP_COMPILER
#define MESHSWEEP_COMPILER "unknown"
#endif
#ifndef MESHSWEEP_BUILD_FLAGS
#define MESHSWEEP_BUILD_FLAGS "unknown"
#endif

//  CPU flags that select different kernels, in fingerprint order.
static const char *s_flags[] = {"sse4_2",      "avx",         "avx2",
                                "fma",         "f16c",        "avx512f",
                                "avx512dq",    "avx512bw",    "avx512vl",
                                "avx512_vnni", "avx512_bf16", "amx_tile"};

//  --------------------------------------------------------------------------
//  Copy a string into a fixed array, trimmed of surrounding blanks.

static void
s_set(char *dst, size_t size, const char *src)
{
    while (*src == ' ' || *src == '\t')
        src++;
    snprintf(dst, size, "%s", src);
    size_t n = strlen(dst);
    while (n > 0 && (dst[n - 1] == '\n' || dst[n - 1] == ' '))
        dst[--n] = '\0';
}

//  --------------------------------------------------------------------------
//  True when word is one of the blank-separated tokens of list.

static int
s_has_token(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n) {
        bool start = p == list || p[-1] == ' ' || p[-1] == '\t';
        bool end = p[n] == ' ' || p[n] == '\n' || p[n] == '\0';
        if (start && end)
            return 1;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Model name and flags from /proc/cpuinfo.

static void
s_read_cpuinfo(ms_platform_t *out)
{
    s_set(out->cpu_model, sizeof out->cpu_model, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    bool have_model = false, have_flags = false;
    while ((!have_model || !have_flags) && getline(&line, &cap, f) > 0) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        if (!have_model && strncmp(line, "model name", 10) == 0) {
            s_set(out->cpu_model, sizeof out->cpu_model, colon + 1);
            have_model = true;
        } else if (!have_flags && strncmp(line, "flags", 5) == 0) {
            size_t used = 0;
            for (size_t i = 0; i < sizeof s_flags / sizeof s_flags[0]; i++)
                if (s_has_token(colon + 1, s_flags[i]))
                    used +=
                        (size_t) snprintf(out->cpu_flags + used,
                                          used < sizeof out->cpu_flags
                                              ? sizeof out->cpu_flags - used
                                              : 0,
                                          "%s%s", used ? " " : "", s_flags[i]);
            have_flags = true;
        }
    }
    free(line);
    fclose(f);
}

//  --------------------------------------------------------------------------
//  Fill the platform facts.

int
ms_platform_detect(ms_platform_t *out, const ms_backend_t *backend)
{
    memset(out, 0, sizeof *out);
    s_set(out->backend, sizeof out->backend,
          backend ? ms_backend_name(backend) : "cpu");
    s_read_cpuinfo(out);
    const char *config = openblas_get_config();
    s_set(out->blas_config, sizeof out->blas_config,
          config ? config : "unknown");
    //  "OpenBLAS 0.3.21 DYNAMIC_ARCH ...": the first two words.
    char name[32] = "", version[32] = "";
    if (config && sscanf(config, "%31s %31s", name, version) == 2)
        snprintf(out->blas, sizeof out->blas, "%s %s", name, version);
    else
        s_set(out->blas, sizeof out->blas, "unknown");
    const char *core = openblas_get_corename();
    s_set(out->blas_core, sizeof out->blas_core, core ? core : "unknown");
    out->blas_threads = openblas_get_num_threads();
    snprintf(out->build, sizeof out->build, "%s numerics %d", MESHSWEEP_VERSION,
             MS_ENGINE_NUMERICS_VERSION);
    s_set(out->compiler, sizeof out->compiler, MESHSWEEP_COMPILER);
    s_set(out->build_flags, sizeof out->build_flags, MESHSWEEP_BUILD_FLAGS);
    snprintf(out->libc, sizeof out->libc, "glibc %s", gnu_get_libc_version());
    ms_backend_info_t info;
    if (backend && ms_backend_info(backend, &info) == MS_OK &&
        strcmp(info.backend, "cuda") == 0) {
        s_set(out->gpu, sizeof out->gpu,
              info.device[0] ? info.device : "unknown");
        snprintf(out->gpu_cc, sizeof out->gpu_cc, "%d.%d", (int) info.cc_major,
                 (int) info.cc_minor);
        //  CUDA writes versions as 1000 major + 10 minor (13000 = 13.0),
        //  cuBLAS as 10000 major + 100 minor + patch (130100 = 13.1.0).
        snprintf(out->gpu_driver, sizeof out->gpu_driver, "%d.%d",
                 (int) info.driver_version / 1000,
                 (int) info.driver_version % 1000 / 10);
        snprintf(out->cuda_runtime, sizeof out->cuda_runtime, "%d.%d",
                 (int) info.runtime_version / 1000,
                 (int) info.runtime_version % 1000 / 10);
        snprintf(out->cublas, sizeof out->cublas, "%d.%d.%d",
                 (int) info.blas_version / 10000,
                 (int) info.blas_version / 100 % 100,
                 (int) info.blas_version % 100);
        out->tf32 = info.tf32;
        out->cublas_workspace_bytes = info.workspace_bytes;
        out->tiny_gemm = info.tiny_gemm;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Seconds on the monotonic clock.

static double
s_now(void)
{
    return ms_clock_mono_s();
}

//  --------------------------------------------------------------------------
//  Single-thread SGEMM GFLOP/s.

double
ms_platform_calibrate(void)
{
    enum { N = 256, RUNS = 7 };
    float *a = malloc(3 * (size_t) N * N * sizeof(float));
    if (!a)
        return 0.0;
    float *b = a + N * N, *c = b + N * N;
    for (int i = 0; i < N * N; i++) {
        a[i] = (float) ((i * 7 % 13) - 6) * 0.1f;
        b[i] = (float) ((i * 5 % 11) - 5) * 0.1f;
    }
    int threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
    double best = 1e30;
    for (int r = 0; r < RUNS; r++) {
        double t0 = s_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a,
                    N, b, N, 0.0f, c, N);
        double t = s_now() - t0;
        if (r > 0 && t < best) // the first run warms caches and pages
            best = t;
    }
    openblas_set_num_threads(threads);
    free(a);
    return best > 0 ? 2.0 * N * N * (double) N / best * 1e-9 : 0.0;
}

//  --------------------------------------------------------------------------
//  Fingerprint fields in order.

void
ms_platform_fields(const ms_platform_t *self, ms_platform_field_fn fn,
                   void *arg)
{
    char threads[16];
    snprintf(threads, sizeof threads, "%d", (int) self->blas_threads);
    fn(arg, "backend", self->backend);
    fn(arg, "cpu_model", self->cpu_model);
    fn(arg, "cpu_flags", self->cpu_flags);
    fn(arg, "blas", self->blas);
    fn(arg, "blas_core", self->blas_core);
    fn(arg, "blas_threads", threads);
    fn(arg, "build", self->build);
    fn(arg, "compiler", self->compiler);
    fn(arg, "build_flags", self->build_flags);
    fn(arg, "libc", self->libc);
    if (strcmp(self->backend, "cuda") != 0)
        return;
    char workspace[24];
    snprintf(workspace, sizeof workspace, "%lld",
             (long long) self->cublas_workspace_bytes);
    fn(arg, "gpu", self->gpu);
    fn(arg, "gpu_cc", self->gpu_cc);
    fn(arg, "gpu_driver", self->gpu_driver);
    fn(arg, "cuda_runtime", self->cuda_runtime);
    fn(arg, "cublas", self->cublas);
    fn(arg, "tf32", self->tf32 ? "on" : "off");
    fn(arg, "cublas_workspace_bytes", workspace);
    fn(arg, "gemm", self->tiny_gemm ? "cublas+small" : "cublas");
}

//  --------------------------------------------------------------------------
//  The CPU quota of the cgroup v2 at dir (its cpu.max), in whole CPUs
//  rounded up; 0 when it sets none or cannot be read.

static long
s_cgroup_cpu_quota(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/cpu.max", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char quota[32] = "";
    long period = 0;
    int n = fscanf(f, "%31s %ld", quota, &period);
    fclose(f);
    if (n != 2 || period <= 0 || strcmp(quota, "max") == 0)
        return 0;
    long q = strtol(quota, NULL, 10);
    return q > 0 ? (q + period - 1) / period : 0;
}

//  --------------------------------------------------------------------------
//  The CPUs this process may use.

int
ms_platform_usable_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        n = CPU_COUNT(&set);
    // cgroup v2: "0::/PATH" in /proc/self/cgroup; the quota of PATH and of
    // every cgroup above it (the smallest wins).
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3) != 0)
            continue;
        char dir[4096 + 16];
        line[strcspn(line, "\n")] = 0;
        snprintf(dir, sizeof dir, "/sys/fs/cgroup%s", line + 3);
        for (;;) {
            long q = s_cgroup_cpu_quota(dir);
            if (q > 0 && q < n)
                n = q;
            char *slash = strrchr(dir, '/');
            if (!slash || slash == dir + strlen("/sys/fs/cgroup"))
                break;
            *slash = 0;
        }
        long q = s_cgroup_cpu_quota("/sys/fs/cgroup");
        if (q > 0 && q < n)
            n = q;
        break;
    }
    if (f)
        fclose(f);
    return n > 0 ? (int) (n > 4096 ? 4096 : n) : 1;
}
