/*  =========================================================================
    ms_blob_test - unit tests of ms_blob_store and ms_blob_fetch

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Two to four blob stores in temporary directories, each with a fetcher,
    wired through an in-process fake transport: every envelope is encoded
    with ms_wire_encode_envelope and decoded on delivery (the real codec),
    queued, and delivered in random order (seeded) with a chance of being
    dropped. A node can be a liar (flips a byte of every chunk it sends)
    or silent (never answers). When the queue is empty the clock jumps by
    the request timeout and every fetcher ticks.
*/
#include "ms_blob_fetch.h"
#include "ms_blob_store.h"
#include "ms_dataset.h"
#include "ms_rng.h"
#include "ms_wire.h"
#include "ms_test_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#define ID MS_BLOB_PEER_ID_BYTES
#define T_MAX_NODES 4
#define T_TIMEOUT_MS 1000
#define KIB 1024u
#define MIB (1024u * 1024u)

typedef struct t_net t_net_t;

typedef struct {
    t_net_t *net;           // the network it is on
    uint8_t id[ID];         // node id
    char dir[300];          // its data dir
    ms_blob_store_t *store; // its blobs
    ms_blob_fetch_t *fetch; // its fetcher
    ms_blob_transport_t tp; // sends from this node
    bool liar;              // corrupts the chunks it sends
    bool silent;            // never answers requests
    int n_done;             // done callbacks
    int last_status;        // status of the last one
    char last_reason[256];  // its reason
} t_node_t;

typedef struct {
    uint8_t from[ID]; // sender
    uint8_t to[ID];   // receiver
    uint8_t *bytes;   // encoded envelope
    size_t n;         //
} t_msg_t;

struct t_net {
    char root[256]; // temp dir of the test
    t_node_t nodes[T_MAX_NODES];
    int n_nodes;
    t_msg_t *queue;            // undelivered messages
    size_t n_queue;            //
    size_t cap_queue;          //
    ms_rng_t rng;              // delivery order and drops
    double drop;               // chance of dropping a message
    int64_t now;               // fake monotonic clock
    size_t max_in_flight_seen; // sampled at every delivery
    uint64_t served_errors;    // ms_blob_serve refusals
};

//  --------------------------------------------------------------------------
//  Files in a directory (not . and ..).

static int
s_count_files(const char *path)
{
    DIR *dir = opendir(path);
    if (!dir)
        return -1;
    int n = 0;
    struct dirent *ent;
    while ((ent = readdir(dir)))
        if (strcmp(ent->d_name, ".") && strcmp(ent->d_name, ".."))
            n++;
    closedir(dir);
    return n;
}

//  --------------------------------------------------------------------------
//  Transport: encode and queue (a liar flips a byte of each chunk).

static int
s_send(void *arg, const uint8_t to[ID], const ms_wire_envelope_t *env)
{
    t_node_t *node = arg;
    t_net_t *net = node->net;
    ms_wire_envelope_t copy = *env;
    uint8_t *bad = NULL;
    if (node->liar && env->body == MS_WIRE_BODY_BLOB_CHUNK &&
        env->blob_chunk.data_bytes > 0) {
        bad = malloc(env->blob_chunk.data_bytes);
        memcpy(bad, env->blob_chunk.data, env->blob_chunk.data_bytes);
        bad[env->blob_chunk.data_bytes / 2] ^= 0x5a;
        copy.blob_chunk.data = bad;
    }
    uint8_t *bytes = NULL;
    size_t n = 0;
    int rc = ms_wire_encode_envelope(&copy, &bytes, &n);
    free(bad);
    assert_int_equal(rc, MS_OK);
    if (net->n_queue == net->cap_queue) {
        net->cap_queue = net->cap_queue ? net->cap_queue * 2 : 64;
        net->queue = realloc(net->queue, net->cap_queue * sizeof(t_msg_t));
        assert_non_null(net->queue);
    }
    t_msg_t *m = &net->queue[net->n_queue++];
    memcpy(m->from, node->id, ID);
    memcpy(m->to, to, ID);
    m->bytes = bytes;
    m->n = n;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Done callback: remember the outcome.

static void
s_done(void *arg, const ms_hash_t *hash, int status, const char *reason)
{
    (void) hash;
    t_node_t *node = arg;
    node->n_done++;
    node->last_status = status;
    snprintf(node->last_reason, sizeof node->last_reason, "%s", reason);
}

//  --------------------------------------------------------------------------
//  A network of n nodes, each with a store (quota 0) and a fetcher.

static t_net_t *
s_net_new(int n, uint64_t seed, const ms_blob_fetch_config_t *cfg)
{
    t_net_t *net = calloc(1, sizeof *net);
    assert_non_null(net);
    snprintf(net->root, sizeof net->root, "/tmp/ms_blob_test.XXXXXX");
    assert_non_null(mkdtemp(net->root));
    ms_rng_seed(&net->rng, seed, 7);
    net->now = 1000;
    net->n_nodes = n;
    for (int i = 0; i < n; i++) {
        t_node_t *node = &net->nodes[i];
        node->net = net;
        memset(node->id, 0, ID);
        node->id[0] = 0xb0;
        node->id[31] = (uint8_t) i;
        snprintf(node->dir, sizeof node->dir, "%s/n%d", net->root, i);
        ms_diag_t diag;
        assert_int_equal(ms_blob_store_open(&node->store, node->dir, 0, &diag),
                         MS_OK);
        node->tp.arg = node;
        node->tp.send = s_send;
        node->fetch =
            ms_blob_fetch_new(node->store, cfg, &node->tp, s_done, node);
        assert_non_null(node->fetch);
    }
    return net;
}

//  --------------------------------------------------------------------------
//  Free the network and its directories.

static void
s_net_destroy(t_net_t **net_p)
{
    t_net_t *net = *net_p;
    for (int i = 0; i < net->n_nodes; i++) {
        ms_blob_fetch_destroy(&net->nodes[i].fetch);
        ms_blob_store_destroy(&net->nodes[i].store);
    }
    for (size_t i = 0; i < net->n_queue; i++)
        free(net->queue[i].bytes);
    free(net->queue);
    ms_tf_rm_rf(net->root);
    free(net);
    *net_p = NULL;
}

//  --------------------------------------------------------------------------
//  Node with this id.

static t_node_t *
s_node(t_net_t *net, const uint8_t id[ID])
{
    for (int i = 0; i < net->n_nodes; i++)
        if (memcmp(net->nodes[i].id, id, ID) == 0)
            return &net->nodes[i];
    return NULL;
}

//  --------------------------------------------------------------------------
//  Deliver one random message (or drop it).

static void
s_deliver_one(t_net_t *net)
{
    size_t k = (size_t) ms_rng_below(&net->rng, net->n_queue);
    t_msg_t m = net->queue[k];
    net->queue[k] = net->queue[--net->n_queue];
    if (net->drop > 0 && ms_rng_uniform(&net->rng) < net->drop) {
        free(m.bytes);
        return;
    }
    ms_wire_envelope_t *env = NULL;
    assert_int_equal(ms_wire_decode_envelope(m.bytes, m.n, &env), MS_OK);
    free(m.bytes);
    t_node_t *to = s_node(net, m.to);
    assert_non_null(to);
    if (env->body == MS_WIRE_BODY_BLOB_REQUEST) {
        if (!to->silent && ms_blob_serve(to->store, m.from, &env->blob_request,
                                         &to->tp) != MS_OK)
            net->served_errors++;
    } else
        assert_int_equal(
            ms_blob_fetch_on_message(to->fetch, m.from, env, net->now), MS_OK);
    ms_wire_envelope_destroy(&env);
}

//  --------------------------------------------------------------------------
//  Run until no fetch is running (bounded); checks the window each step.

static void
s_run(t_net_t *net, uint32_t window)
{
    for (int step = 0; step < 200000; step++) {
        size_t running = 0;
        for (int i = 0; i < net->n_nodes; i++) {
            size_t inflight = ms_blob_fetch_in_flight(net->nodes[i].fetch);
            assert_true(inflight <= window);
            if (inflight > net->max_in_flight_seen)
                net->max_in_flight_seen = inflight;
            running += ms_blob_fetch_count(net->nodes[i].fetch);
        }
        if (running == 0)
            return;
        if (net->n_queue > 0) {
            net->now += 1;
            s_deliver_one(net);
        } else {
            net->now += T_TIMEOUT_MS;
            for (int i = 0; i < net->n_nodes; i++)
                ms_blob_fetch_tick(net->nodes[i].fetch, net->now);
        }
    }
    fail_msg("fetch did not end");
}

//  --------------------------------------------------------------------------
//  n pseudo-random bytes.

static uint8_t *
s_random_bytes(size_t n, uint64_t seed)
{
    uint8_t *b = malloc(n ? n : 1);
    ms_rng_t rng;
    ms_rng_seed(&rng, seed, 1);
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = ms_rng_next(&rng);
        memcpy(b + i, &v, n - i < 8 ? n - i : 8);
    }
    return b;
}

//  --------------------------------------------------------------------------
//  The held blob's bytes hash to hash (read back through its path).

static void
s_assert_blob(ms_blob_store_t *store, const ms_hash_t *hash)
{
    char *path = NULL;
    assert_int_equal(ms_blob_store_path(store, hash, &path), MS_OK);
    ms_hash_t h;
    assert_int_equal(ms_hash_file(path, &h, NULL), MS_OK);
    assert_true(ms_hash_equal(&h, hash));
    free(path);
}

//  --------------------------------------------------------------------------
//  Config with a given chunk size and window.

static ms_blob_fetch_config_t
s_cfg(uint32_t chunk, uint32_t window)
{
    ms_blob_fetch_config_t cfg;
    ms_blob_fetch_config_default(&cfg);
    cfg.chunk_bytes = chunk;
    cfg.window = window;
    cfg.request_timeout_ms = T_TIMEOUT_MS;
    return cfg;
}

//  --------------------------------------------------------------------------
//  Two stores: B fetches a 3 MB blob from A in random order.

static void
test_fetch_two_stores(void **state)
{
    (void) state;
    ms_blob_fetch_config_t cfg = s_cfg(256 * KIB, 4);
    t_net_t *net = s_net_new(2, 1, &cfg);
    size_t n = 3 * MIB + 12345; // last chunk short
    uint8_t *data = s_random_bytes(n, 11);
    ms_hash_t h;
    assert_int_equal(ms_blob_store_put(net->nodes[0].store, data, n, &h),
                     MS_OK);
    assert_false(ms_blob_store_has(net->nodes[1].store, &h));
    assert_int_equal(ms_blob_fetch_start(
                         net->nodes[1].fetch, &h, n,
                         (const uint8_t(*)[ID]) net->nodes[0].id, 1, net->now),
                     MS_OK);
    assert_int_equal(ms_blob_fetch_in_flight(net->nodes[1].fetch), 4);
    assert_true(ms_blob_fetch_next_deadline(net->nodes[1].fetch) < INT64_MAX);
    s_run(net, 4);
    t_node_t *b = &net->nodes[1];
    assert_int_equal(b->n_done, 1);
    assert_int_equal(b->last_status, MS_OK);
    assert_true(ms_blob_store_has(b->store, &h));
    s_assert_blob(b->store, &h);
    uint8_t tail[100];
    assert_int_equal(ms_blob_store_read(b->store, &h, n - 100, 100, tail),
                     MS_OK);
    assert_memory_equal(tail, data + n - 100, 100);
    ms_blob_fetch_stats_t st;
    ms_blob_fetch_stats(b->fetch, &st);
    assert_int_equal(st.chunks_received, 13);
    assert_int_equal(st.bytes_received, n);
    assert_int_equal(st.hash_mismatches, 0);
    assert_int_equal(st.max_in_flight, 4);
    assert_int_equal(ms_blob_fetch_next_deadline(b->fetch), INT64_MAX);
    //  Nothing left in blobs/tmp; a second start completes at once.
    char tmp[400];
    snprintf(tmp, sizeof tmp, "%s/blobs/tmp", b->dir);
    assert_int_equal(s_count_files(tmp), 0);
    assert_int_equal(ms_blob_fetch_start(b->fetch, &h, n, NULL, 0, net->now),
                     MS_OK);
    assert_int_equal(b->n_done, 2);
    assert_int_equal(b->last_status, MS_OK);
    free(data);
    s_net_destroy(&net);
}

//  --------------------------------------------------------------------------
//  Three stores, drops, one liar: mismatch detected, fetched from the
//  honest peer. Both orders of the peer list (liar tried alone first or
//  second).

static void
test_fetch_liar_and_drops(void **state)
{
    (void) state;
    for (int order = 0; order < 2; order++) {
        ms_blob_fetch_config_t cfg = s_cfg(256 * KIB, 6);
        cfg.peer_timeouts = 4; // drops are frequent here: be patient
        t_net_t *net = s_net_new(3, 100 + (uint64_t) order, &cfg);
        net->drop = 0.05;
        size_t n = 4 * MIB;
        uint8_t *data = s_random_bytes(n, 22);
        ms_hash_t h;
        assert_int_equal(ms_blob_store_put(net->nodes[0].store, data, n, &h),
                         MS_OK);
        assert_int_equal(ms_blob_store_put(net->nodes[1].store, data, n, &h),
                         MS_OK);
        net->nodes[1].liar = true;
        uint8_t peers[2][ID];
        memcpy(peers[order], net->nodes[0].id, ID);
        memcpy(peers[1 - order], net->nodes[1].id, ID);
        t_node_t *c = &net->nodes[2];
        assert_int_equal(ms_blob_fetch_start(c->fetch, &h, n,
                                             (const uint8_t(*)[ID]) peers, 2,
                                             net->now),
                         MS_OK);
        s_run(net, 6);
        assert_int_equal(c->n_done, 1);
        assert_int_equal(c->last_status, MS_OK);
        s_assert_blob(c->store, &h);
        ms_blob_fetch_stats_t st;
        ms_blob_fetch_stats(c->fetch, &st);
        //  Liar listed second: the spread attempt mismatches, the honest
        //  peer alone succeeds. Listed first: it is tried alone first,
        //  mismatches again and is dropped.
        assert_true(st.hash_mismatches >= (order == 0 ? 1u : 2u));
        if (order == 1)
            assert_true(st.peers_dropped >= 1);
        ms_blob_store_stats_t ss;
        ms_blob_store_stats(c->store, &ss);
        assert_int_equal(ss.mismatches, st.hash_mismatches);
        assert_int_equal(ss.n_copies, 1);
        char tmp[400];
        snprintf(tmp, sizeof tmp, "%s/blobs/tmp", c->dir);
        assert_int_equal(s_count_files(tmp), 0);
        free(data);
        s_net_destroy(&net);
    }
}

//  --------------------------------------------------------------------------
//  Only liars: the fetch fails with a clear reason, no blob stored.

static void
test_fetch_all_liars_fails(void **state)
{
    (void) state;
    ms_blob_fetch_config_t cfg = s_cfg(256 * KIB, 4);
    t_net_t *net = s_net_new(3, 5, &cfg);
    size_t n = MIB;
    uint8_t *data = s_random_bytes(n, 33);
    ms_hash_t h;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(ms_blob_store_put(net->nodes[i].store, data, n, &h),
                         MS_OK);
        net->nodes[i].liar = true;
    }
    uint8_t peers[2][ID];
    memcpy(peers[0], net->nodes[0].id, ID);
    memcpy(peers[1], net->nodes[1].id, ID);
    t_node_t *c = &net->nodes[2];
    assert_int_equal(ms_blob_fetch_start(c->fetch, &h, n,
                                         (const uint8_t(*)[ID]) peers, 2,
                                         net->now),
                     MS_OK);
    s_run(net, 4);
    assert_int_equal(c->n_done, 1);
    assert_int_equal(c->last_status, MS_ERR_PROTOCOL);
    assert_non_null(strstr(c->last_reason, "hash mismatch"));
    assert_false(ms_blob_store_has(c->store, &h));
    ms_blob_fetch_stats_t st;
    ms_blob_fetch_stats(c->fetch, &st);
    assert_int_equal(st.hash_mismatches, 3); // spread, then each alone
    char tmp[400];
    snprintf(tmp, sizeof tmp, "%s/blobs/tmp", c->dir);
    assert_int_equal(s_count_files(tmp), 0);
    free(data);
    s_net_destroy(&net);
}

//  --------------------------------------------------------------------------
//  A peer without the blob answers BLOB_MISSING, a silent one times out:
//  both dropped, the fetch ends from the third. With no holder at all
//  the fetch fails MS_ERR_NOTFOUND.

static void
test_fetch_missing_and_silent_peers(void **state)
{
    (void) state;
    ms_blob_fetch_config_t cfg = s_cfg(256 * KIB, 4);
    cfg.peer_timeouts = 1;
    t_net_t *net = s_net_new(4, 9, &cfg);
    size_t n = 2 * MIB;
    uint8_t *data = s_random_bytes(n, 44);
    ms_hash_t h;
    assert_int_equal(ms_blob_store_put(net->nodes[2].store, data, n, &h),
                     MS_OK);
    net->nodes[1].silent = true;
    uint8_t peers[3][ID];
    for (int i = 0; i < 3; i++)
        memcpy(peers[i], net->nodes[i].id, ID);
    t_node_t *d = &net->nodes[3];
    assert_int_equal(ms_blob_fetch_start(d->fetch, &h, n,
                                         (const uint8_t(*)[ID]) peers, 3,
                                         net->now),
                     MS_OK);
    s_run(net, 4);
    assert_int_equal(d->last_status, MS_OK);
    s_assert_blob(d->store, &h);
    ms_blob_fetch_stats_t st;
    ms_blob_fetch_stats(d->fetch, &st);
    assert_true(st.missing_received >= 1);
    assert_true(st.timeouts >= 1);
    assert_int_equal(st.peers_dropped, 2);

    //  Nobody has this one.
    ms_hash_t h2;
    ms_hash_bytes("absent", 6, &h2);
    net->nodes[1].silent = false;
    assert_int_equal(ms_blob_fetch_start(d->fetch, &h2, 5 * MIB,
                                         (const uint8_t(*)[ID]) peers, 3,
                                         net->now),
                     MS_OK);
    s_run(net, 4);
    assert_int_equal(d->last_status, MS_ERR_NOTFOUND);
    assert_non_null(strstr(d->last_reason, "no peer left"));
    free(data);
    s_net_destroy(&net);
}

//  --------------------------------------------------------------------------
//  The 30 MB case: Fashion-MNIST train images registered (no copy) on A
//  when installed, else 30 MB of random bytes; B fetches it with 1 MiB
//  chunks and a window of 4 never passed.

static void
test_fetch_30mb_registered_window(void **state)
{
    (void) state;
    ms_blob_fetch_config_t cfg = s_cfg(MIB, 4);
    t_net_t *net = s_net_new(2, 3, &cfg);
    t_node_t *a = &net->nodes[0], *b = &net->nodes[1];
    ms_hash_t h;
    ms_diag_t diag;
    ms_hash_t four[4];
    char *src = NULL;
    if (ms_blob_store_register_builtin(a->store, "fashion-mnist", four,
                                       &diag) == MS_OK) {
        h = four[0]; // train images, 26 MB
        print_message("source: fashion-mnist train images (registered)\n");
        assert_int_equal(ms_blob_store_path(a->store, &h, &src), MS_OK);
        assert_non_null(strstr(src, "train-images"));
    } else {
        size_t n = 30 * MIB;
        uint8_t *data = s_random_bytes(n, 55);
        char path[400];
        snprintf(path, sizeof path, "%s/random.bin", net->root);
        FILE *fp = fopen(path, "wb");
        assert_non_null(fp);
        assert_int_equal(fwrite(data, 1, n, fp), n);
        fclose(fp);
        free(data);
        assert_int_equal(ms_blob_store_register_file(a->store, path, &h, &diag),
                         MS_OK);
        src = strdup(path);
        print_message("source: 30 MB of random bytes (registered)\n");
    }
    //  Registered, not copied: A holds no copy, its path is the source.
    ms_blob_store_stats_t ss;
    ms_blob_store_stats(a->store, &ss);
    assert_int_equal(ss.n_copies, 0);
    assert_int_equal(ss.used_bytes, 0);
    assert_true(ss.n_registered >= 1);
    char *p = NULL;
    assert_int_equal(ms_blob_store_path(a->store, &h, &p), MS_OK);
    assert_string_equal(p, src);
    free(p);
    uint64_t size = 0;
    assert_int_equal(ms_blob_store_size(a->store, &h, &size), MS_OK);
    assert_true(size > 20 * MIB);

    assert_int_equal(ms_blob_fetch_start(b->fetch, &h, size,
                                         (const uint8_t(*)[ID]) a->id, 1,
                                         net->now),
                     MS_OK);
    s_run(net, 4);
    assert_int_equal(b->last_status, MS_OK);
    assert_int_equal(net->max_in_flight_seen, 4);
    ms_blob_fetch_stats_t st;
    ms_blob_fetch_stats(b->fetch, &st);
    assert_int_equal(st.max_in_flight, 4);
    assert_int_equal(st.chunks_received, (size + MIB - 1) / MIB);
    assert_int_equal(st.bytes_received, size);
    s_assert_blob(b->store, &h);
    ms_blob_store_stats(b->store, &ss);
    assert_int_equal(ss.used_bytes, size);
    free(src);
    s_net_destroy(&net);
}

//  --------------------------------------------------------------------------
//  register_file: persisted, re-checked by size + mtime, re-hashed.

static void
test_register_file_rehash(void **state)
{
    (void) state;
    char root[] = "/tmp/ms_blob_test.XXXXXX";
    assert_non_null(mkdtemp(root));
    char dir[300], file[300];
    snprintf(dir, sizeof dir, "%s/data", root);
    snprintf(file, sizeof file, "%s/local.bin", root);
    FILE *fp = fopen(file, "wb");
    fputs("hello blobs", fp);
    fclose(fp);
    ms_blob_store_t *s = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_blob_store_open(&s, dir, 0, &diag), MS_OK);
    ms_hash_t h, want;
    ms_hash_bytes("hello blobs", 11, &want);
    assert_int_equal(ms_blob_store_register_file(s, file, &h, &diag), MS_OK);
    assert_true(ms_hash_equal(&h, &want));
    char buf[5];
    assert_int_equal(ms_blob_store_read(s, &h, 6, 5, buf), MS_OK);
    assert_memory_equal(buf, "blobs", 5);
    assert_int_equal(ms_blob_store_read(s, &h, 7, 5, buf), MS_ERR_RANGE);
    ms_blob_store_destroy(&s);

    //  Reopen: the registration was saved. Touch the mtime only: re-hash,
    //  still the same blob.
    assert_int_equal(ms_blob_store_open(&s, dir, 0, &diag), MS_OK);
    assert_true(ms_blob_store_has(s, &h));
    struct timespec ts[2] = {{1000000, 0}, {1000000, 0}};
    assert_int_equal(utimensat(AT_FDCWD, file, ts, 0), 0);
    assert_true(ms_blob_store_has(s, &h));
    ms_blob_store_stats_t st;
    ms_blob_store_stats(s, &st);
    assert_int_equal(st.rehashes, 1);
    assert_true(ms_blob_store_has(s, &h)); // unchanged now: no re-hash
    ms_blob_store_stats(s, &st);
    assert_int_equal(st.rehashes, 1);

    //  Change the content (same size): dropped.
    fp = fopen(file, "wb");
    fputs("HELLO blobs", fp);
    fclose(fp);
    utimensat(AT_FDCWD, file, ts, 0); // even with the old mtime...
    struct timespec ts2[2] = {{2000000, 0}, {2000000, 0}};
    utimensat(AT_FDCWD, file, ts2, 0); // ...a new one is what changes
    assert_false(ms_blob_store_has(s, &h));
    char *p = NULL;
    assert_int_equal(ms_blob_store_path(s, &h, &p), MS_ERR_NOTFOUND);
    assert_null(p);
    ms_blob_store_stats(s, &st);
    assert_int_equal(st.n_registered, 0);

    //  Not a regular file, absent file: clear errors naming the path.
    assert_int_equal(ms_blob_store_register_file(s, root, &h, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, root);
    assert_int_equal(
        ms_blob_store_register_file(s, "/nonexistent/x", &h, &diag), MS_ERR_IO);
    assert_string_equal(diag.where, "/nonexistent/x");
    ms_blob_store_destroy(&s);

    //  A corrupt index is refused with the file named.
    char idx[400];
    snprintf(idx, sizeof idx, "%s/blobs/registered.json", dir);
    fp = fopen(idx, "w");
    fputs("{\"files\": [{\"hash\": \"zz\"}]}", fp);
    fclose(fp);
    assert_int_equal(ms_blob_store_open(&s, dir, 0, &diag), MS_ERR_INVALID);
    assert_null(s);
    assert_string_equal(diag.where, idx);
    ms_tf_rm_rf(root);
}

//  --------------------------------------------------------------------------
//  Quota: LRU eviction over unpinned copies; pinned kept; full refused.

static void
test_quota_lru_pinned(void **state)
{
    (void) state;
    char root[] = "/tmp/ms_blob_test.XXXXXX";
    assert_non_null(mkdtemp(root));
    ms_blob_store_t *s = NULL;
    ms_diag_t diag;
    size_t n = 100 * KIB;
    assert_int_equal(ms_blob_store_open(&s, root, 3 * n, &diag), MS_OK);
    uint8_t *d[5];
    ms_hash_t h[5];
    for (int i = 0; i < 5; i++)
        d[i] = s_random_bytes(n, 100 + (uint64_t) i);
    for (int i = 0; i < 3; i++)
        assert_int_equal(ms_blob_store_put(s, d[i], n, &h[i]), MS_OK);
    //  Use 0, so LRU order is 1, 2, 0; pin 1: the victim is 2.
    char *p = NULL;
    assert_int_equal(ms_blob_store_path(s, &h[0], &p), MS_OK);
    free(p);
    assert_int_equal(ms_blob_store_pin(s, &h[1]), MS_OK);
    assert_int_equal(ms_blob_store_put(s, d[3], n, &h[3]), MS_OK);
    assert_true(ms_blob_store_has(s, &h[0]));
    assert_true(ms_blob_store_has(s, &h[1]));
    assert_false(ms_blob_store_has(s, &h[2]));
    assert_true(ms_blob_store_has(s, &h[3]));
    ms_blob_store_stats_t st;
    ms_blob_store_stats(s, &st);
    assert_int_equal(st.evictions, 1);
    assert_int_equal(st.used_bytes, 3 * n);
    //  Pin everything: no room; the new blob is refused, nothing lost.
    assert_int_equal(ms_blob_store_pin(s, &h[0]), MS_OK);
    assert_int_equal(ms_blob_store_pin(s, &h[3]), MS_OK);
    assert_int_equal(ms_blob_store_put(s, d[4], n, &h[4]), MS_ERR_STORE_FULL);
    assert_false(ms_blob_store_has(s, &h[4]));
    //  Bigger than the quota: refused at once.
    int fd = -1;
    char *tmp = NULL;
    assert_int_equal(ms_blob_store_tmp_create(s, 3 * n + 1, &fd, &tmp),
                     MS_ERR_STORE_FULL);
    assert_int_equal(fd, -1);
    //  Unpin 0 (counted pins: 1 needs 1 unpin): 0 goes next.
    assert_int_equal(ms_blob_store_unpin(s, &h[0]), MS_OK);
    assert_int_equal(ms_blob_store_unpin(s, &h[2]), MS_ERR_NOTFOUND);
    assert_int_equal(ms_blob_store_put(s, d[4], n, &h[4]), MS_OK);
    assert_false(ms_blob_store_has(s, &h[0]));
    assert_true(ms_blob_store_has(s, &h[1]));
    ms_blob_store_destroy(&s);
    //  Reopen: the copies are found again.
    assert_int_equal(ms_blob_store_open(&s, root, 3 * n, &diag), MS_OK);
    ms_blob_store_stats(s, &st);
    assert_int_equal(st.n_copies, 3);
    assert_int_equal(st.used_bytes, 3 * n);
    ms_blob_store_destroy(&s);
    for (int i = 0; i < 5; i++)
        free(d[i]);
    ms_tf_rm_rf(root);
}

//  --------------------------------------------------------------------------
//  A crash mid-fetch (a child process exits with half the chunks written)
//  leaves no blob under its name; open cleans the temp file; a new
//  fetch completes.

static void
test_crash_mid_fetch(void **state)
{
    (void) state;
    ms_blob_fetch_config_t cfg = s_cfg(256 * KIB, 4);
    t_net_t *net = s_net_new(2, 4, &cfg);
    size_t n = 2 * MIB;
    uint8_t *data = s_random_bytes(n, 66);
    ms_hash_t h;
    assert_int_equal(ms_blob_store_put(net->nodes[0].store, data, n, &h),
                     MS_OK);
    t_node_t *b = &net->nodes[1];
    char tmp[400], final[400], hex[MS_HASH_HEX_LEN + 1];
    snprintf(tmp, sizeof tmp, "%s/blobs/tmp", b->dir);
    ms_hash_hex(&h, hex);
    snprintf(final, sizeof final, "%s/blobs/%s", b->dir, hex);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (ms_blob_fetch_start(b->fetch, &h, n,
                                (const uint8_t(*)[ID]) net->nodes[0].id, 1,
                                net->now) != MS_OK)
            _exit(2);
        ms_blob_fetch_stats_t st;
        for (int i = 0; i < 10000 && net->n_queue > 0; i++) {
            ms_blob_fetch_stats(b->fetch, &st);
            if (st.chunks_received >= 4)
                _exit(0); // "crash": no clean-up at all
            s_deliver_one(net);
        }
        _exit(3);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(s_count_files(tmp), 1); // the half-written temp file
    struct stat st;
    assert_int_not_equal(stat(final, &st), 0);
    //  Restart: temp removed, blob absent; fetch again.
    ms_blob_fetch_destroy(&b->fetch);
    ms_blob_store_destroy(&b->store);
    ms_diag_t diag;
    assert_int_equal(ms_blob_store_open(&b->store, b->dir, 0, &diag), MS_OK);
    assert_int_equal(s_count_files(tmp), 0);
    assert_false(ms_blob_store_has(b->store, &h));
    b->fetch = ms_blob_fetch_new(b->store, &cfg, &b->tp, s_done, b);
    assert_non_null(b->fetch);
    assert_int_equal(ms_blob_fetch_start(
                         b->fetch, &h, n,
                         (const uint8_t(*)[ID]) net->nodes[0].id, 1, net->now),
                     MS_OK);
    s_run(net, 4);
    assert_int_equal(b->last_status, MS_OK);
    assert_int_equal(stat(final, &st), 0);
    assert_int_equal((size_t) st.st_size, n);
    free(data);
    s_net_destroy(&net);
}

//  --------------------------------------------------------------------------
//  Capture transport for serve tests: keeps the last envelope sent.

typedef struct {
    int n_sent;
    ms_wire_body_t body;
    uint64_t offset, total;
    size_t data_bytes;
} t_capture_t;

static int
s_capture(void *arg, const uint8_t to[ID], const ms_wire_envelope_t *env)
{
    (void) to;
    t_capture_t *c = arg;
    c->n_sent++;
    c->body = env->body;
    if (env->body == MS_WIRE_BODY_BLOB_CHUNK) {
        c->offset = env->blob_chunk.offset;
        c->total = env->blob_chunk.total;
        c->data_bytes = env->blob_chunk.data_bytes;
        //  What is sent must be encodable (the decoder's contract).
        uint8_t *bytes = NULL;
        size_t n = 0;
        assert_int_equal(ms_wire_encode_envelope(env, &bytes, &n), MS_OK);
        free(bytes);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  BLOB_REQUEST garbage (bad offsets, huge lengths) refused; a random
//  mix never answers more than asked or past the end.

static void
test_serve_refuses_garbage(void **state)
{
    (void) state;
    char root[] = "/tmp/ms_blob_test.XXXXXX";
    assert_non_null(mkdtemp(root));
    ms_blob_store_t *s = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_blob_store_open(&s, root, 0, &diag), MS_OK);
    size_t n = 300 * KIB + 7;
    uint8_t *data = s_random_bytes(n, 77);
    ms_hash_t h;
    assert_int_equal(ms_blob_store_put(s, data, n, &h), MS_OK);
    t_capture_t cap;
    memset(&cap, 0, sizeof cap);
    ms_blob_transport_t tp = {&cap, s_capture};
    uint8_t from[ID] = {1};
    ms_wire_blob_request_t rq;
    memcpy(rq.hash, h.bytes, ID);

    rq.offset = 0;
    rq.length = 0;
    assert_int_equal(ms_blob_serve(s, from, &rq, &tp), MS_ERR_PROTOCOL);
    rq.length = MS_WIRE_BLOB_CHUNK_MAX_BYTES + 1;
    assert_int_equal(ms_blob_serve(s, from, &rq, &tp), MS_ERR_PROTOCOL);
    rq.length = UINT32_MAX;
    assert_int_equal(ms_blob_serve(s, from, &rq, &tp), MS_ERR_PROTOCOL);
    rq.offset = UINT64_MAX - 10;
    rq.length = 100;
    assert_int_equal(ms_blob_serve(s, from, &rq, &tp), MS_ERR_PROTOCOL);
    rq.offset = n;
    assert_int_equal(ms_blob_serve(s, from, &rq, &tp), MS_ERR_RANGE);
    rq.offset = n + MIB;
    assert_int_equal(ms_blob_serve(s, from, &rq, &tp), MS_ERR_RANGE);
    assert_int_equal(cap.n_sent, 0);

    //  The tail is clamped to the blob; an unknown hash gets MISSING.
    rq.offset = n - 10;
    rq.length = MIB;
    assert_int_equal(ms_blob_serve(s, from, &rq, &tp), MS_OK);
    assert_int_equal(cap.body, MS_WIRE_BODY_BLOB_CHUNK);
    assert_int_equal(cap.data_bytes, 10);
    assert_int_equal(cap.total, n);
    rq.hash[0] ^= 1;
    assert_int_equal(ms_blob_serve(s, from, &rq, &tp), MS_OK);
    assert_int_equal(cap.body, MS_WIRE_BODY_BLOB_MISSING);
    rq.hash[0] ^= 1;

    //  Random requests: every answer within what was asked and the blob.
    ms_rng_t rng;
    ms_rng_seed(&rng, 123, 0);
    int answered = 0;
    for (int i = 0; i < 3000; i++) {
        ms_wire_blob_request_t r;
        memcpy(r.hash, h.bytes, ID);
        if (ms_rng_below(&rng, 4) == 0)
            r.hash[ms_rng_below(&rng, ID)] ^= 0x80;
        uint64_t pick = ms_rng_below(&rng, 3);
        r.offset = pick == 0   ? ms_rng_next(&rng)
                   : pick == 1 ? ms_rng_below(&rng, n + 10)
                               : n - ms_rng_below(&rng, 4);
        r.length = ms_rng_below(&rng, 2) ? (uint32_t) ms_rng_next(&rng)
                                         : (uint32_t) ms_rng_below(&rng, 5000);
        cap.n_sent = 0;
        cap.body = MS_WIRE_BODY_NONE;
        int rc = ms_blob_serve(s, from, &r, &tp);
        assert_true(rc == MS_OK || rc == MS_ERR_PROTOCOL || rc == MS_ERR_RANGE);
        assert_int_equal(cap.n_sent, rc == MS_OK ? 1 : 0);
        if (cap.body == MS_WIRE_BODY_BLOB_CHUNK) {
            answered++;
            assert_true(cap.data_bytes >= 1);
            assert_true(cap.data_bytes <= r.length);
            assert_true(cap.offset + cap.data_bytes <= n);
            assert_int_equal(cap.offset, r.offset);
        }
    }
    assert_true(answered > 100);
    free(data);
    ms_blob_store_destroy(&s);
    ms_tf_rm_rf(root);
}

//  --------------------------------------------------------------------------
//  Chunks the fetcher did not ask for are ignored; other bodies refused;
//  cancel removes the temp file; bad configs are refused.

static void
test_fetch_rejects_stray_chunks_and_cancel(void **state)
{
    (void) state;
    ms_blob_fetch_config_t cfg = s_cfg(256 * KIB, 2);
    t_net_t *net = s_net_new(2, 8, &cfg);
    t_node_t *a = &net->nodes[0], *b = &net->nodes[1];
    size_t n = MIB;
    uint8_t *data = s_random_bytes(n, 88);
    ms_hash_t h;
    assert_int_equal(ms_blob_store_put(a->store, data, n, &h), MS_OK);
    assert_int_equal(ms_blob_fetch_start(b->fetch, &h, n,
                                         (const uint8_t(*)[ID]) a->id, 1,
                                         net->now),
                     MS_OK);
    assert_int_equal(ms_blob_fetch_start(b->fetch, &h, n + 1,
                                         (const uint8_t(*)[ID]) a->id, 1,
                                         net->now),
                     MS_ERR_INVALID);
    ms_wire_envelope_t env;
    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_BLOB_CHUNK;
    memcpy(env.blob_chunk.hash, h.bytes, ID);
    env.blob_chunk.total = n;
    env.blob_chunk.data = data;
    uint8_t stranger[ID] = {9};
    struct {
        const uint8_t *from;
        uint64_t offset, total;
        size_t len;
    } bad[] = {
        {stranger, 0, n, 256 * KIB},      // not asked of this peer
        {a->id, 512 * KIB, n, 256 * KIB}, // not asked yet (window 2)
        {a->id, 100, n, 256 * KIB},       // not a chunk boundary
        {a->id, 0, n + 1, 256 * KIB},     // wrong total
        {a->id, 0, n, 1000},              // wrong length
        {a->id, 99 * MIB, n, 256 * KIB},  // past the end
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        env.blob_chunk.offset = bad[i].offset;
        env.blob_chunk.total = bad[i].total;
        env.blob_chunk.data_bytes = bad[i].len;
        assert_int_equal(
            ms_blob_fetch_on_message(b->fetch, bad[i].from, &env, net->now),
            MS_OK);
    }
    ms_blob_fetch_stats_t st;
    ms_blob_fetch_stats(b->fetch, &st);
    assert_int_equal(st.chunks_rejected, 6);
    assert_int_equal(st.chunks_received, 0);
    env.body = MS_WIRE_BODY_HEARTBEAT;
    assert_int_equal(ms_blob_fetch_on_message(b->fetch, a->id, &env, net->now),
                     MS_ERR_PROTOCOL);

    char tmp[400];
    snprintf(tmp, sizeof tmp, "%s/blobs/tmp", b->dir);
    assert_int_equal(s_count_files(tmp), 1);
    assert_int_equal(ms_blob_fetch_cancel(b->fetch, &h), MS_OK);
    assert_int_equal(b->last_status, MS_ERR_INTERRUPTED);
    assert_int_equal(ms_blob_fetch_cancel(b->fetch, &h), MS_ERR_NOTFOUND);
    assert_int_equal(s_count_files(tmp), 0);
    assert_int_equal(ms_blob_fetch_count(b->fetch), 0);
    //  Late answers to the cancelled fetch are ignored.
    s_run(net, 2);
    while (net->n_queue > 0)
        s_deliver_one(net);
    assert_false(ms_blob_store_has(b->store, &h));

    //  Configs out of range.
    ms_blob_fetch_config_t c2 = s_cfg(1000, 4);
    assert_null(ms_blob_fetch_new(b->store, &c2, &b->tp, NULL, NULL));
    c2 = s_cfg(2 * MIB, 4);
    assert_null(ms_blob_fetch_new(b->store, &c2, &b->tp, NULL, NULL));
    c2 = s_cfg(MIB, 0);
    assert_null(ms_blob_fetch_new(b->store, &c2, &b->tp, NULL, NULL));
    //  The empty blob needs no request: stored at once.
    ms_hash_t empty;
    ms_hash_bytes(NULL, 0, &empty);
    int before = b->n_done;
    assert_int_equal(ms_blob_fetch_start(b->fetch, &empty, 0,
                                         (const uint8_t(*)[ID]) a->id, 1,
                                         net->now),
                     MS_OK);
    assert_int_equal(b->n_done, before + 1);
    assert_int_equal(b->last_status, MS_OK);
    assert_true(ms_blob_store_has(b->store, &empty));
    assert_int_equal(net->n_queue, 0);
    //  No peers for a blob not held.
    ms_hash_t h2;
    ms_hash_bytes("x", 1, &h2);
    assert_int_equal(ms_blob_fetch_start(b->fetch, &h2, 10, NULL, 0, net->now),
                     MS_ERR_INVALID);
    free(data);
    s_net_destroy(&net);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fetch_two_stores),
        cmocka_unit_test(test_fetch_liar_and_drops),
        cmocka_unit_test(test_fetch_all_liars_fails),
        cmocka_unit_test(test_fetch_missing_and_silent_peers),
        cmocka_unit_test(test_fetch_30mb_registered_window),
        cmocka_unit_test(test_register_file_rehash),
        cmocka_unit_test(test_quota_lru_pinned),
        cmocka_unit_test(test_crash_mid_fetch),
        cmocka_unit_test(test_serve_refuses_garbage),
        cmocka_unit_test(test_fetch_rejects_stray_chunks_and_cancel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
