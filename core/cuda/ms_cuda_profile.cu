/*  =========================================================================
    ms_cuda_profile - per-operation device times of one training step, for
    the GPU benchmark (MESHSWEEP_CUDA_PROFILE=1)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A small network's step costs a few microseconds per operation, and the
    host issues an operation in about as long: timed as it is issued, the
    gaps would be the host's. So profile_begin first holds the stream with
    a spin kernel (S_HOLD_NS of device time), records a start event, and
    arms the marks; each op then records an event after itself; the host
    issues the whole step while the device spins, and the device runs it
    back to back, as a replayed graph would (less the graph's own launch
    savings). The captured step's graph is counted by node type (kernels,
    memsets, copies): what cuBLAS adds shows there. profile_end waits and turns
   the events into each op's time: the difference of consecutive events, which
   is the op's run plus the device's gap between dependent launches (what the
   dependent chain costs). A graph replay profiled the same way is one
   "graph_launch" op. Nothing here runs unless MESHSWEEP_CUDA_PROFILE=1 at open;
   marks are skipped while the stream is being captured.
*/
#include "ms_cuda_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_MARKS 256      // ops per section
#define S_MAX_ENTRIES 2048   // ops kept over all sections
#define S_HOLD_NS 3000000ull // spin before a section: 3 ms

typedef struct {
    char section[32]; // "step", "graph"
    char op[24];      // op name
    int64_t dims[3];  // its shape (0 when unused)
    float us;         // device microseconds to the previous event
} s_entry_t;

struct ms_cuda_prof {
    bool armed;                       // between begin and end
    int n_marks;                      // events after ev[0] this section
    cudaEvent_t ev[S_MAX_MARKS + 1];  // ev[0]: start
    s_entry_t pending[S_MAX_MARKS];   // this section's ops
    char section[32];                 // this section's name
    s_entry_t entries[S_MAX_ENTRIES]; // finished sections
    int n_entries;
    int n_sections;
    int graph_nodes[4]; // last captured graph: kernels, memsets, memcpys,
                        // other nodes (-1: none captured)
};

//  --------------------------------------------------------------------------
//  Spin for ns nanoseconds of device time (the global timer).

static __global__ void
s_hold_kernel(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

//  --------------------------------------------------------------------------
//  State and events when MESHSWEEP_CUDA_PROFILE=1.

int
ms_cuda_prof_open(ms_backend_t *b)
{
    const char *env = getenv("MESHSWEEP_CUDA_PROFILE");
    if (!env || strcmp(env, "1") != 0)
        return MS_OK;
    ms_cuda_prof_t *p = (ms_cuda_prof_t *) calloc(1, sizeof *p);
    if (!p)
        return MS_ERR_NOMEM;
    b->cuda->prof = p;
    p->graph_nodes[0] = -1;
    for (int i = 0; i <= S_MAX_MARKS; i++)
        MS_CUDA_CHECK(b, cudaEventCreate(&p->ev[i]));
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free them.

void
ms_cuda_prof_close(ms_backend_t *b)
{
    ms_cuda_prof_t *p = b->cuda->prof;
    if (!p)
        return;
    for (int i = 0; i <= S_MAX_MARKS; i++)
        if (p->ev[i])
            cudaEventDestroy(p->ev[i]);
    free(p);
    b->cuda->prof = NULL;
}

//  --------------------------------------------------------------------------
//  Profiling on?

extern "C" bool
ms_cuda_profiling(const ms_backend_t *b)
{
    return b->cuda && b->cuda->prof;
}

//  --------------------------------------------------------------------------
//  Hold the stream, start a section.

extern "C" int
ms_cuda_profile_begin(ms_backend_t *b, const char *section)
{
    ms_cuda_prof_t *p = b->cuda->prof;
    if (!p)
        return MS_ERR_UNSUPPORTED;
    if (p->armed)
        return MS_ERR_INVALID;
    s_hold_kernel<<<1, 1, 0, b->cuda->stream>>>(S_HOLD_NS);
    MS_CUDA_LAUNCHED(b, "s_hold_kernel");
    MS_CUDA_CHECK(b, cudaEventRecord(p->ev[0], b->cuda->stream));
    snprintf(p->section, sizeof p->section, "%s", section ? section : "step");
    p->n_marks = 0;
    p->armed = true;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  After an op: an event and its label.

void
ms_cuda_prof_mark(ms_backend_t *b, const char *op, int64_t d0, int64_t d1,
                  int64_t d2)
{
    ms_cuda_prof_t *p = b->cuda->prof;
    if (!p || !p->armed || p->n_marks >= S_MAX_MARKS)
        return;
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(b->cuda->stream, &cs) != cudaSuccess ||
        cs != cudaStreamCaptureStatusNone)
        return;
    if (cudaEventRecord(p->ev[p->n_marks + 1], b->cuda->stream) != cudaSuccess)
        return;
    s_entry_t *e = &p->pending[p->n_marks++];
    snprintf(e->op, sizeof e->op, "%s", op);
    e->dims[0] = d0;
    e->dims[1] = d1;
    e->dims[2] = d2;
}

//  --------------------------------------------------------------------------
//  Wait, keep the section's times.

extern "C" int
ms_cuda_profile_end(ms_backend_t *b)
{
    ms_cuda_prof_t *p = b->cuda->prof;
    if (!p || !p->armed)
        return MS_ERR_INVALID;
    p->armed = false;
    MS_CUDA_CHECK(b, cudaEventSynchronize(p->ev[p->n_marks]));
    for (int i = 0; i < p->n_marks && p->n_entries < S_MAX_ENTRIES; i++) {
        s_entry_t *e = &p->entries[p->n_entries++];
        *e = p->pending[i];
        snprintf(e->section, sizeof e->section, "%s", p->section);
        float ms = 0;
        MS_CUDA_CHECK(b, cudaEventElapsedTime(&ms, p->ev[i], p->ev[i + 1]));
        e->us = ms * 1000.0f;
    }
    p->n_sections++;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Count a captured graph's nodes by type: every kernel cuBLAS adds (a
//  split-K reduction, say) shows here.

void
ms_cuda_prof_graph(ms_backend_t *b, cudaGraph_t graph)
{
    ms_cuda_prof_t *p = b->cuda->prof;
    if (!p)
        return;
    size_t n = 0;
    if (cudaGraphGetNodes(graph, NULL, &n) != cudaSuccess)
        return;
    cudaGraphNode_t *nodes =
        (cudaGraphNode_t *) calloc(n ? n : 1, sizeof *nodes);
    if (!nodes || cudaGraphGetNodes(graph, nodes, &n) != cudaSuccess) {
        free(nodes);
        cudaGetLastError();
        return;
    }
    memset(p->graph_nodes, 0, sizeof p->graph_nodes);
    for (size_t i = 0; i < n; i++) {
        cudaGraphNodeType t = cudaGraphNodeTypeEmpty;
        cudaGraphNodeGetType(nodes[i], &t);
        p->graph_nodes[t == cudaGraphNodeTypeKernel   ? 0
                       : t == cudaGraphNodeTypeMemset ? 1
                       : t == cudaGraphNodeTypeMemcpy ? 2
                                                      : 3]++;
    }
    free(nodes);
}

//  --------------------------------------------------------------------------
//  The report, one line per op and one total per section.

extern "C" int
ms_cuda_profile_report(const ms_backend_t *b, char *buf, size_t n)
{
    const ms_cuda_prof_t *p = b->cuda ? b->cuda->prof : NULL;
    if (!p || !buf || n == 0)
        return p ? p->n_sections : 0;
    size_t used = 0;
    if (p->graph_nodes[0] >= 0) {
        int w = snprintf(buf, n,
                         "profile graph_nodes kernels %d memsets %d memcpys "
                         "%d other %d\n",
                         p->graph_nodes[0], p->graph_nodes[1],
                         p->graph_nodes[2], p->graph_nodes[3]);
        if (w > 0 && (size_t) w < n)
            used = (size_t) w;
    }
    double total = 0;
    int index = 0;
    for (int i = 0; i < p->n_entries; i++) {
        const s_entry_t *e = &p->entries[i];
        bool first = i == 0 || strcmp(e->section, p->entries[i - 1].section) ||
                     index == 0;
        if (first) {
            total = 0;
            index = 0;
        }
        total += e->us;
        int w = snprintf(buf + used, n - used,
                         "profile %s %d %s %lldx%lldx%lld %.2f\n", e->section,
                         index++, e->op, (long long) e->dims[0],
                         (long long) e->dims[1], (long long) e->dims[2], e->us);
        if (w < 0 || (size_t) w >= n - used)
            break;
        used += (size_t) w;
        bool last = i + 1 == p->n_entries ||
                    strcmp(e->section, p->entries[i + 1].section) != 0;
        if (last) {
            w = snprintf(buf + used, n - used, "profile %s total %.2f\n",
                         e->section, total);
            if (w < 0 || (size_t) w >= n - used)
                break;
            used += (size_t) w;
            index = 0;
        }
    }
    return p->n_sections;
}
