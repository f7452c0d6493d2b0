/*  =========================================================================
    ms_node_mesh_test - nodes in a pool on loopback (open pool, no beacon,
    static peers): a sweep submitted to one is worked on by all and every
    node ends with the same results and state digests; a node SIGKILLed
    mid-sweep has its tasks redone elsewhere after the lease TTL, and
    catches up when it comes back; sweep control travels to every node

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Nodes A and B run in this process (ms_node_poll in turn); node C runs
    in a forked child so that it can be killed with SIGKILL. Loopback
    only; every wait is bounded.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_node.h"
#include "ms_node_testdata.h"
#include "ms_node_fixture.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define S_TTL_MS 1500 // lease TTL in these tests
#define S_HB_MS 200   // heartbeat

//  --------------------------------------------------------------------------
//  Open node NAME on its mesh port with the given static peers.

static ms_node_t *
s_open(const char *name, int port, const char *const *peers, int n_peers)
{
    char dir[512];
    ms_node_options_t opts;
    ms_nf_options(&opts, dir, sizeof dir, name, 1);
    ms_nf_mesh(&opts, port, peers, n_peers);
    opts.open_pool = "mesh-test";
    opts.lease_ttl_ms = S_TTL_MS;
    opts.heartbeat_ms = S_HB_MS;
    opts.verbose = getenv("MS_TEST_VERBOSE") != NULL;
    return ms_nf_open(&opts);
}

//  --------------------------------------------------------------------------
//  Poll every node once (short waits).

static void
s_poll_all(ms_node_t **nodes, int n)
{
    for (int i = 0; i < n; i++)
        if (nodes[i])
            assert_int_equal(ms_node_poll(nodes[i], 5), MS_OK);
}

//  --------------------------------------------------------------------------
//  Monotonic seconds.

static double
s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

//  --------------------------------------------------------------------------
//  True when the sweep is finished (done + failed == total) on node.

static bool
s_finished(ms_node_t *node, const ms_hash_t *sweep)
{
    ms_sweep_progress_t p;
    if (ms_node_sweep_progress(node, sweep, &p) != MS_OK)
        return false;
    return p.total > 0 && p.done + p.failed == p.total;
}

//  --------------------------------------------------------------------------
//  Results digest of a node as hex.

static void
s_digests(ms_node_t *node, char results[65], char state[65])
{
    uint8_t d[32];
    ms_hash_t h;
    assert_int_equal(ms_store_results_digest(ms_node_store(node), d), MS_OK);
    memcpy(h.bytes, d, 32);
    ms_hash_hex(&h, results);
    assert_int_equal(ms_store_state_digest(ms_node_store(node), d), MS_OK);
    memcpy(h.bytes, d, 32);
    ms_hash_hex(&h, state);
}

//  Rows seen per sweep: tasks and nodes.
typedef struct {
    json_t *rows; // array of row objects
} s_rows_t;

//  --------------------------------------------------------------------------
//  Collect one row.

static int
s_row(void *arg, const char *json, size_t n)
{
    s_rows_t *r = arg;
    json_error_t err;
    json_t *row = json_loadb(json, n, 0, &err);
    assert_non_null(row);
    json_array_append_new(r->rows, row);
    return 0;
}

//  --------------------------------------------------------------------------
//  Check a node's rows: every task has a result, no (task, node) twice;
//  returns the number of distinct nodes behind them.

static int
s_check_rows(ms_node_t *node, const ms_hash_t *sweep, int n_tasks)
{
    s_rows_t r = {.rows = json_array()};
    assert_int_equal(ms_store_results_by_sweep(ms_node_store(node),
                                               sweep->bytes, 0, 0, s_row, &r,
                                               NULL),
                     MS_OK);
    json_t *tasks = json_object(), *pairs = json_object(),
           *nodes = json_object();
    size_t i;
    json_t *row;
    json_array_foreach(r.rows, i, row)
    {
        const char *t = json_string_value(json_object_get(row, "task_id"));
        const char *nd = json_string_value(json_object_get(row, "node_id"));
        assert_non_null(t);
        assert_non_null(nd);
        char pair[200];
        snprintf(pair, sizeof pair, "%s/%s", t, nd);
        assert_null(json_object_get(pairs, pair)); // one per (task, node)
        json_object_set_new(pairs, pair, json_true());
        json_object_set_new(tasks, t, json_true());
        json_object_set_new(nodes, nd, json_true());
    }
    assert_int_equal((int) json_object_size(tasks), n_tasks); // none missing
    int n_nodes = (int) json_object_size(nodes);
    json_decref(tasks);
    json_decref(pairs);
    json_decref(nodes);
    json_decref(r.rows);
    return n_nodes;
}

//  --------------------------------------------------------------------------
//  Three nodes: a sweep submitted to A is worked on by all three, and all
//  end with the same results table and the same state digest.

static void
test_three_nodes_share_a_sweep(void **state)
{
    (void) state;
    int pa = ms_td_free_port(), pb = ms_td_free_port(), pc = ms_td_free_port();
    char ea[64], eb[64];
    snprintf(ea, sizeof ea, "tcp://127.0.0.1:%d", pa);
    snprintf(eb, sizeof eb, "tcp://127.0.0.1:%d", pb);
    const char *peers_b[] = {ea};
    const char *peers_c[] = {ea, eb};
    ms_node_t *nodes[3];
    nodes[0] = s_open("a", pa, NULL, 0);
    nodes[1] = s_open("b", pb, peers_b, 1);
    nodes[2] = s_open("c", pc, peers_c, 2);
    assert_int_equal(ms_node_mesh_port(nodes[0]), pa);

    // They see each other within a few seconds.
    double until = s_now() + 10;
    bool linked = false;
    while (!linked && s_now() < until) {
        s_poll_all(nodes, 3);
        linked = true;
        for (int i = 0; i < 3; i++) {
            json_t *peers = ms_node_peers_json(nodes[i]);
            int alive = 0;
            size_t k;
            json_t *p;
            json_array_foreach(peers, k, p)
            {
                const char *st = json_string_value(json_object_get(p, "state"));
                alive += st && strcmp(st, "alive") == 0 &&
                         json_is_true(json_object_get(p, "linked"));
            }
            json_decref(peers);
            linked = linked && alive == 2;
        }
    }
    assert_true(linked);

    const char *spec = ms_td_spec("pool-share", 6, 4, 3); // 24 tasks
    ms_hash_t sweep;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_node_submit(nodes[0], spec, strlen(spec), false, &sweep,
                                    NULL, NULL, &diag),
                     MS_OK);
    until = s_now() + 45;
    bool all = false;
    while (!all && s_now() < until) {
        s_poll_all(nodes, 3);
        all = s_finished(nodes[0], &sweep) && s_finished(nodes[1], &sweep) &&
              s_finished(nodes[2], &sweep);
    }
    assert_true(all);
    // The last records settle within a few rounds.
    char r0[65], s0[65], r1[65], s1[65], r2[65], s2[65];
    until = s_now() + 5;
    do {
        s_poll_all(nodes, 3);
        s_digests(nodes[0], r0, s0);
        s_digests(nodes[1], r1, s1);
        s_digests(nodes[2], r2, s2);
    } while ((strcmp(r0, r1) || strcmp(r0, r2) || strcmp(s0, s1) ||
              strcmp(s0, s2)) &&
             s_now() < until);
    assert_string_equal(r0, r1);
    assert_string_equal(r0, r2);
    assert_string_equal(s0, s1);
    assert_string_equal(s0, s2);
    for (int i = 0; i < 3; i++) {
        int n_nodes = s_check_rows(nodes[i], &sweep, 24);
        assert_int_equal(n_nodes, 3); // every node did some of the work
    }
    // Sweep control travels: pausing on C is seen on A.
    ms_diag_clear(&diag);
    assert_int_equal(
        ms_node_control(nodes[2], &sweep, MS_NODE_CONTROL_PRIORITY, 5, &diag),
        MS_OK);
    until = s_now() + 5;
    int32_t prio = 0;
    while (prio != 5 && s_now() < until) {
        s_poll_all(nodes, 3);
        ms_store_sweep_t *sw = NULL;
        if (ms_store_get_sweep(ms_node_store(nodes[0]), sweep.bytes, &sw) ==
            MS_OK)
            prio = sw->priority;
        ms_store_sweep_destroy(&sw);
    }
    assert_int_equal(prio, 5);
    for (int i = 0; i < 3; i++)
        ms_node_destroy(&nodes[i]);
}

//  --------------------------------------------------------------------------
//  Run node C in this (child) process until killed; write its id first.

static void
s_child_node(int pc, const char *const *peers, int n_peers)
{
    ms_node_t *node = s_open("c", pc, peers, n_peers);
    char path[600];
    snprintf(path, sizeof path, "%s/c.id", ms_td_root);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%s\n", ms_node_id_hex(node));
        fclose(f);
    }
    for (int i = 0; i < 200000; i++) // bounded: killed long before
        if (ms_node_poll(node, 20) != MS_OK)
            break;
    _exit(0);
}

//  Claims of one node on a task, found.
typedef struct {
    uint8_t node[32]; // the node
    bool found;       // it has a claim
} s_claimed_t;

//  --------------------------------------------------------------------------
//  Is this claim the node's?

static int
s_claim_of(void *arg, const ms_store_claim_t *claim)
{
    s_claimed_t *c = arg;
    if (memcmp(claim->node_id, c->node, 32) == 0 && claim->claimed &&
        !claim->released)
        c->found = true;
    return 0;
}

//  Task ids of a sweep.
typedef struct {
    uint8_t ids[64][32]; // task ids
    int n;               // count
} s_ids_t;

//  --------------------------------------------------------------------------
//  Collect a task id.

static int
s_task_id(void *arg, const ms_store_task_t *task)
{
    s_ids_t *ids = arg;
    if (ids->n < 64)
        memcpy(ids->ids[ids->n++], task->task_id, 32);
    return 0;
}

//  --------------------------------------------------------------------------
//  A node SIGKILLed mid-sweep: its tasks are redone after the TTL, no
//  task is missing, one counted result per (task, node); restarted, it
//  catches up to the same digests.

static void
test_killed_node_tasks_redone_and_catch_up(void **state)
{
    (void) state;
    int pa = ms_td_free_port(), pb = ms_td_free_port(), pc = ms_td_free_port();
    char ea[64], eb[64], ec[64];
    snprintf(ea, sizeof ea, "tcp://127.0.0.1:%d", pa);
    snprintf(eb, sizeof eb, "tcp://127.0.0.1:%d", pb);
    snprintf(ec, sizeof ec, "tcp://127.0.0.1:%d", pc);
    const char *peers_c[] = {ea, eb};
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0)
        s_child_node(pc, peers_c, 2);
    const char *peers_a[] = {ec};
    const char *peers_b[] = {ea, ec};
    ms_node_t *nodes[3] = {NULL, NULL, NULL};
    nodes[0] = s_open("a", pa, peers_a, 1);
    nodes[1] = s_open("b", pb, peers_b, 1 + 1);

    // C's id, once it wrote it.
    char path[600], id_hex[80] = "";
    snprintf(path, sizeof path, "%s/c.id", ms_td_root);
    double until = s_now() + 10;
    while (!id_hex[0] && s_now() < until) {
        s_poll_all(nodes, 2);
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(id_hex, sizeof id_hex, f))
                id_hex[0] = 0;
            fclose(f);
        }
    }
    id_hex[strcspn(id_hex, "\n")] = 0;
    assert_int_equal(strlen(id_hex), 64);
    s_claimed_t cl = {.found = false};
    ms_hash_t cid;
    assert_int_equal(ms_hash_from_hex(id_hex, &cid), MS_OK);
    memcpy(cl.node, cid.bytes, 32);

    // Wait until the three are linked (A sees two alive peers).
    until = s_now() + 10;
    int alive = 0;
    while (alive < 2 && s_now() < until) {
        s_poll_all(nodes, 2);
        json_t *peers = ms_node_peers_json(nodes[0]);
        alive = 0;
        size_t k;
        json_t *p;
        json_array_foreach(peers, k, p)
        {
            const char *st = json_string_value(json_object_get(p, "state"));
            alive += st && strcmp(st, "alive") == 0;
        }
        json_decref(peers);
    }
    assert_int_equal(alive, 2);

    const char *spec = ms_td_spec("pool-kill", 4, 3, 40); // 12 longer tasks
    ms_hash_t sweep;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_node_submit(nodes[0], spec, strlen(spec), false, &sweep,
                                    NULL, NULL, &diag),
                     MS_OK);
    s_ids_t ids = {.n = 0};
    assert_int_equal(ms_store_tasks_by_sweep(ms_node_store(nodes[0]),
                                             sweep.bytes, s_task_id, &ids),
                     MS_OK);
    assert_int_equal(ids.n, 12);
    // Kill C once A knows a live claim of C on an unfinished task.
    until = s_now() + 30;
    while (!cl.found && s_now() < until) {
        s_poll_all(nodes, 2);
        for (int i = 0; i < ids.n && !cl.found; i++) {
            ms_store_task_t *t = NULL;
            if (ms_store_get_task(ms_node_store(nodes[0]), ids.ids[i], &t) ==
                    MS_OK &&
                t->state != MS_TASK_DONE)
                ms_store_claims_by_task(ms_node_store(nodes[0]), ids.ids[i],
                                        s_claim_of, &cl);
            ms_store_task_destroy(&t);
        }
    }
    assert_true(cl.found);
    assert_int_equal(kill(child, SIGKILL), 0);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);

    // A and B finish the sweep (C's tasks redone after the TTL).
    until = s_now() + 50;
    bool done = false;
    while (!done && s_now() < until) {
        s_poll_all(nodes, 2);
        done = s_finished(nodes[0], &sweep) && s_finished(nodes[1], &sweep);
    }
    assert_true(done);
    char r0[65], s0[65], r1[65], s1[65], r2[65], s2[65];
    until = s_now() + 5;
    do {
        s_poll_all(nodes, 2);
        s_digests(nodes[0], r0, s0);
        s_digests(nodes[1], r1, s1);
    } while ((strcmp(r0, r1) || strcmp(s0, s1)) && s_now() < until);
    assert_string_equal(r0, r1);
    assert_string_equal(s0, s1);
    s_check_rows(nodes[0], &sweep, 12);
    s_check_rows(nodes[1], &sweep, 12);

    // C comes back (same data dir) and catches up.
    const char *peers_c2[] = {ea, eb};
    nodes[2] = s_open("c", pc, peers_c2, 2);
    until = s_now() + 20;
    do {
        s_poll_all(nodes, 3);
        s_digests(nodes[0], r0, s0);
        s_digests(nodes[2], r2, s2);
    } while ((strcmp(r0, r2) || strcmp(s0, s2)) && s_now() < until);
    assert_string_equal(r0, r2);
    assert_string_equal(s0, s2);
    s_check_rows(nodes[2], &sweep, 12);
    for (int i = 0; i < 3; i++)
        ms_node_destroy(&nodes[i]);
}

int
main(void)
{
    setenv("OPENBLAS_CORETYPE", "Haswell", 0);
    setenv("OPENBLAS_L2_SIZE", "512", 0);
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_three_nodes_share_a_sweep,
                                        ms_td_root_setup, ms_td_root_teardown),
        cmocka_unit_test_setup_teardown(
            test_killed_node_tasks_redone_and_catch_up, ms_td_root_setup,
            ms_td_root_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
