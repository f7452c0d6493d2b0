/*  =========================================================================
    bench_sign - cost of signed blocks: per-block sign and verify, and the
    per-record payload hashing they include

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Usage: bench_sign [SECONDS_PER_CASE]   (default 1)

    For blocks of 1, 2, 8 and 64 records with payloads of 64, 1,024 and
    65,536 bytes (a claim or result is 60 to 400 bytes; a fragment is 60
    KiB): ms_wire_block_signed_bytes (the hashing alone),
    ms_wire_block_sign and ms_wire_block_verify, each run for about
    SECONDS_PER_CASE, single thread. Prints one line per case: us per
    block for each step and us per record of hashing. Figures in
    docs/BENCHMARKS.md "Signing".
*/
#include "ms_hash.h"
#include "ms_identity.h"
#include "ms_wire_sign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

//  --------------------------------------------------------------------------
//  Monotonic seconds.

static double
s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

//  What to time.
typedef enum { S_HASH, S_SIGN, S_VERIFY } s_step_t;

//  --------------------------------------------------------------------------
//  Run step on block for about secs; microseconds per call.

static double
s_time(s_step_t step, const ms_identity_t *id, const uint8_t *pool,
       const ms_wire_block_view_t *v, const uint8_t *sig, double secs)
{
    uint8_t out[MS_WIRE_SIGN_MAX_BYTES], s[MS_WIRE_SIGNATURE_BYTES];
    size_t n;
    long calls = 0;
    double t0 = s_now(), t = t0;
    int rc = MS_OK;
    while (t - t0 < secs) {
        for (int i = 0; i < 16; i++) {
            if (step == S_HASH)
                rc |= ms_wire_block_signed_bytes(pool, v, out, &n);
            else if (step == S_SIGN)
                rc |= ms_wire_block_sign(id, pool, v, s);
            else
                rc |= ms_wire_block_verify(pool, v, sig, 64);
        }
        calls += 16;
        t = s_now();
    }
    if (rc != MS_OK) {
        fprintf(stderr, "bench_sign: a step failed\n");
        exit(1);
    }
    return (t - t0) / (double) calls * 1e6;
}

int
main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    if (secs <= 0)
        secs = 1.0;
    char dir[] = "/tmp/bench_sign.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    ms_identity_t *id = NULL;
    ms_diag_t diag;
    if (ms_identity_open(&id, dir, &diag) != MS_OK) {
        fprintf(stderr, "bench_sign: %s: %s\n", diag.where, diag.reason);
        return 1;
    }
    uint8_t pool[32];
    memset(pool, 7, sizeof pool);
    static uint8_t payload[65536];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t) (i * 31 + 7);
    static const size_t n_recs[] = {1, 2, 8, 64};
    static const size_t sizes[] = {64, 1024, 65536};
    printf("%8s %8s %10s %10s %10s %12s\n", "records", "payload", "hash_us",
           "sign_us", "verify_us", "hash_us/rec");
    for (size_t a = 0; a < sizeof n_recs / sizeof n_recs[0]; a++)
        for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++) {
            size_t n = n_recs[a];
            uint32_t kinds[64];
            const uint8_t *pls[64];
            size_t lens[64];
            for (size_t i = 0; i < n; i++) {
                kinds[i] = 7;
                pls[i] = payload;
                lens[i] = sizes[b];
            }
            ms_wire_block_view_t v = {.origin = ms_identity_public_key(id),
                                      .incarnation = 1,
                                      .first_seq = 1,
                                      .n_records = n,
                                      .kinds = kinds,
                                      .payloads = pls,
                                      .lens = lens};
            uint8_t sig[64];
            if (ms_wire_block_sign(id, pool, &v, sig) != MS_OK)
                return 1;
            double h = s_time(S_HASH, id, pool, &v, sig, secs);
            double s = s_time(S_SIGN, id, pool, &v, sig, secs);
            double ver = s_time(S_VERIFY, id, pool, &v, sig, secs);
            printf("%8zu %8zu %10.2f %10.2f %10.2f %12.3f\n", n, sizes[b], h, s,
                   ver, h / (double) n);
            fflush(stdout);
        }
    ms_identity_destroy(&id);
    char path[64];
    snprintf(path, sizeof path, "%s/node.key", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/node.pub", dir);
    unlink(path);
    rmdir(dir);
    return 0;
}
