/*  =========================================================================
    ms_view_test - membership views: full mesh, HyParView over a
    simulated network of 1000 nodes, failures

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ms_view.h"

//  A simulated network: n views, a FIFO of messages, dead nodes.
typedef struct {
    int from, to;
    ms_view_msg_t msg;
} sim_msg_t;

typedef struct {
    int n;
    ms_view_t **views;
    uint8_t (*ids)[MS_VIEW_ID_BYTES];
    bool *dead;
    sim_msg_t *queue;
    size_t q_head, q_len, q_cap;
    int64_t now_ms;
    uint64_t n_sent;
} sim_t;

//  --------------------------------------------------------------------------
//  Node index of an id (ids hold the index in their first 4 bytes)

static int
s_index(const uint8_t *id)
{
    return (int) ((uint32_t) id[0] << 24 | (uint32_t) id[1] << 16 |
                  (uint32_t) id[2] << 8 | id[3]);
}

//  --------------------------------------------------------------------------
//  Make a simulation of n nodes (views not yet introduced)

static sim_t *
s_sim_new(int n, int pool_size, int shuffle_ms)
{
    sim_t *sim = calloc(1, sizeof *sim);
    assert_non_null(sim);
    sim->n = n;
    sim->views = calloc((size_t) n, sizeof *sim->views);
    sim->ids = calloc((size_t) n, sizeof *sim->ids);
    sim->dead = calloc((size_t) n, sizeof *sim->dead);
    sim->q_cap = 1024;
    sim->queue = malloc(sim->q_cap * sizeof *sim->queue);
    sim->now_ms = 1000;
    assert_true(sim->views && sim->ids && sim->dead && sim->queue);
    ms_view_options_t opts;
    ms_view_options_defaults(&opts);
    opts.shuffle_ms = shuffle_ms;
    opts.seed = 42;
    for (int i = 0; i < n; i++) {
        sim->ids[i][0] = (uint8_t) (i >> 24);
        sim->ids[i][1] = (uint8_t) (i >> 16);
        sim->ids[i][2] = (uint8_t) (i >> 8);
        sim->ids[i][3] = (uint8_t) i;
        for (int b = 4; b < MS_VIEW_ID_BYTES; b++)
            sim->ids[i][b] = (uint8_t) (i * 7 + b * 13);
        sim->views[i] = ms_view_new(sim->ids[i], &opts);
        assert_non_null(sim->views[i]);
        ms_view_set_pool_size(sim->views[i], pool_size);
    }
    return sim;
}

//  --------------------------------------------------------------------------
//  Free the simulation

static void
s_sim_destroy(sim_t **sim_p)
{
    sim_t *sim = *sim_p;
    for (int i = 0; i < sim->n; i++)
        ms_view_destroy(&sim->views[i]);
    free(sim->views);
    free(sim->ids);
    free(sim->dead);
    free(sim->queue);
    free(sim);
    *sim_p = NULL;
}

//  --------------------------------------------------------------------------
//  Drain node i's actions into the network (a send to a dead node fails
//  at once: the sender sees its link go down)

static void
s_sim_drain(sim_t *sim, int i)
{
    ms_view_action_t act;
    while (ms_view_next_action(sim->views[i], &act)) {
        if (act.kind != MS_VIEW_ACTION_SEND)
            continue;
        int to = s_index(act.peer);
        assert_true(to >= 0 && to < sim->n);
        assert_int_not_equal(to, i);
        if (sim->dead[to]) {
            ms_view_on_link_down(sim->views[i], act.peer, sim->now_ms);
            continue;
        }
        if (sim->q_len == sim->q_cap) {
            //  compact then grow
            memmove(sim->queue, sim->queue + sim->q_head,
                    (sim->q_len - sim->q_head) * sizeof *sim->queue);
            sim->q_len -= sim->q_head;
            sim->q_head = 0;
            if (sim->q_len == sim->q_cap) {
                sim->q_cap *= 2;
                sim->queue =
                    realloc(sim->queue, sim->q_cap * sizeof *sim->queue);
                assert_non_null(sim->queue);
            }
        }
        sim_msg_t *m = &sim->queue[sim->q_len++];
        m->from = i;
        m->to = to;
        m->msg = act.msg;
        sim->n_sent++;
    }
}

//  --------------------------------------------------------------------------
//  Deliver messages until none is left (bounded)

static void
s_sim_run(sim_t *sim)
{
    for (int i = 0; i < sim->n; i++)
        if (!sim->dead[i])
            s_sim_drain(sim, i);
    long budget = 5000000;
    while (sim->q_head < sim->q_len && budget-- > 0) {
        sim_msg_t m = sim->queue[sim->q_head++];
        if (sim->dead[m.to])
            continue;
        assert_int_equal(ms_view_on_message(sim->views[m.to], sim->ids[m.from],
                                            &m.msg, sim->now_ms),
                         MS_OK);
        s_sim_drain(sim, m.to);
    }
    assert_true(budget > 0);
    sim->q_head = sim->q_len = 0;
}

//  --------------------------------------------------------------------------
//  One round: time passes, every live node ticks, messages settle

static void
s_sim_round(sim_t *sim, int step_ms)
{
    sim->now_ms += step_ms;
    for (int i = 0; i < sim->n; i++)
        if (!sim->dead[i])
            ms_view_tick(sim->views[i], sim->now_ms);
    s_sim_run(sim);
}

//  --------------------------------------------------------------------------
//  Number of live nodes reachable from the first live one over active
//  links (undirected)

static int
s_sim_reachable(sim_t *sim)
{
    int start = -1;
    for (int i = 0; i < sim->n && start < 0; i++)
        if (!sim->dead[i])
            start = i;
    bool *seen = calloc((size_t) sim->n, sizeof *seen);
    int *stack = malloc((size_t) sim->n * sizeof *stack);
    //  undirected: build adjacency by scanning (n is small enough)
    int top = 0, count = 0;
    stack[top++] = start;
    seen[start] = true;
    while (top > 0) {
        int u = stack[--top];
        count++;
        for (int k = 0; k < ms_view_n_active(sim->views[u]); k++) {
            int v = s_index(ms_view_active(sim->views[u], k));
            if (!sim->dead[v] && !seen[v]) {
                seen[v] = true;
                stack[top++] = v;
            }
        }
        for (int v = 0; v < sim->n; v++)
            if (!sim->dead[v] && !seen[v] &&
                ms_view_is_active(sim->views[v], sim->ids[u])) {
                seen[v] = true;
                stack[top++] = v;
            }
    }
    free(seen);
    free(stack);
    return count;
}

//  --------------------------------------------------------------------------
//  Pools up to 16: everyone links to everyone

static void
test_full_mesh_under_16(void **state)
{
    (void) state;
    sim_t *sim = s_sim_new(12, 0, 5000);
    //  every node hears every beacon
    for (int i = 0; i < sim->n; i++)
        for (int j = 0; j < sim->n; j++)
            if (i != j)
                ms_view_on_discovered(sim->views[i], sim->ids[j], 1000);
    s_sim_run(sim);
    for (int r = 0; r < 5; r++)
        s_sim_round(sim, 1000);
    for (int i = 0; i < sim->n; i++) {
        assert_int_equal(ms_view_n_active(sim->views[i]), sim->n - 1);
        assert_int_equal(ms_view_n_passive(sim->views[i]), 0);
        assert_false(ms_view_is_active(sim->views[i], sim->ids[i]));
    }
    s_sim_destroy(&sim);
}

//  --------------------------------------------------------------------------
//  Full mesh: discovery via one contact spreads through FORWARD_JOIN

static void
test_full_mesh_through_one_contact(void **state)
{
    (void) state;
    sim_t *sim = s_sim_new(16, 16, 5000);
    for (int i = 1; i < sim->n; i++) {
        ms_view_on_discovered(sim->views[i], sim->ids[0], sim->now_ms);
        s_sim_run(sim);
    }
    for (int i = 0; i < sim->n; i++)
        assert_int_equal(ms_view_n_active(sim->views[i]), sim->n - 1);
    s_sim_destroy(&sim);
}

//  --------------------------------------------------------------------------
//  The actions of one discovery: LINK then JOIN

static void
test_discovered_actions(void **state)
{
    (void) state;
    uint8_t a[MS_VIEW_ID_BYTES] = {1}, b[MS_VIEW_ID_BYTES] = {2};
    ms_view_t *view = ms_view_new(a, NULL);
    assert_non_null(view);
    ms_view_on_discovered(view, a, 0); // self: ignored
    ms_view_action_t act;
    assert_false(ms_view_next_action(view, &act));
    ms_view_on_discovered(view, b, 0);
    assert_true(ms_view_next_action(view, &act));
    assert_int_equal(act.kind, MS_VIEW_ACTION_LINK);
    assert_memory_equal(act.peer, b, MS_VIEW_ID_BYTES);
    assert_true(ms_view_next_action(view, &act));
    assert_int_equal(act.kind, MS_VIEW_ACTION_SEND);
    assert_int_equal(act.msg.kind, MS_VIEW_MSG_JOIN);
    assert_false(ms_view_next_action(view, &act));
    assert_true(ms_view_is_active(view, b));
    //  link down: b leaves both views
    ms_view_on_link_down(view, b, 10);
    assert_false(ms_view_is_active(view, b));
    assert_false(ms_view_is_passive(view, b));
    //  bad message: refused, nothing changes
    ms_view_msg_t bad = {.kind = MS_VIEW_MSG_SHUFFLE, .n_ids = 99};
    assert_int_equal(ms_view_on_message(view, b, &bad, 10), MS_ERR_PROTOCOL);
    ms_view_msg_t unknown = {.kind = (ms_view_msg_kind_t) 77};
    assert_int_equal(ms_view_on_message(view, b, &unknown, 10),
                     MS_ERR_PROTOCOL);
    ms_view_destroy(&view);
    ms_view_destroy(&view);
    assert_null(view);
}

//  --------------------------------------------------------------------------
//  Active view sizes: full mesh, then 8 + ceil(log2 N) bounded

static void
test_active_max(void **state)
{
    (void) state;
    uint8_t a[MS_VIEW_ID_BYTES] = {1};
    ms_view_t *view = ms_view_new(a, NULL);
    ms_view_set_pool_size(view, 16);
    assert_int_equal(ms_view_active_max(view), MS_VIEW_ACTIVE_CAP);
    ms_view_set_pool_size(view, 17);
    assert_int_equal(ms_view_active_max(view), 8 + 5);
    ms_view_set_pool_size(view, 1000);
    assert_int_equal(ms_view_active_max(view), 8 + 10);
    ms_view_set_pool_size(view, 1 << 24);
    assert_int_equal(ms_view_active_max(view), MS_VIEW_ACTIVE_MAX);
    ms_view_destroy(&view);
}

//  --------------------------------------------------------------------------
//  A full active view refuses a low-priority NEIGHBOR with DISCONNECT,
//  accepts a high-priority one by dropping a random member

static void
test_neighbor_priority(void **state)
{
    (void) state;
    uint8_t self_id[MS_VIEW_ID_BYTES] = {0xff};
    ms_view_t *view = ms_view_new(self_id, NULL);
    ms_view_set_pool_size(view, 100); // active max 8 + 7 = 15
    int max = ms_view_active_max(view);
    assert_int_equal(max, 15);
    ms_view_msg_t req = {.kind = MS_VIEW_MSG_NEIGHBOR, .high_priority = true};
    for (int i = 0; i < max; i++) {
        uint8_t id[MS_VIEW_ID_BYTES] = {(uint8_t) (i + 1)};
        assert_int_equal(ms_view_on_message(view, id, &req, 0), MS_OK);
    }
    assert_int_equal(ms_view_n_active(view), max);
    ms_view_action_t act;
    while (ms_view_next_action(view, &act))
        ;
    uint8_t low[MS_VIEW_ID_BYTES] = {100};
    req.high_priority = false;
    ms_view_on_message(view, low, &req, 0);
    assert_false(ms_view_is_active(view, low));
    assert_true(ms_view_is_passive(view, low));
    assert_true(ms_view_next_action(view, &act));
    assert_int_equal(act.kind, MS_VIEW_ACTION_SEND);
    assert_int_equal(act.msg.kind, MS_VIEW_MSG_DISCONNECT);
    assert_memory_equal(act.peer, low, MS_VIEW_ID_BYTES);
    uint8_t high[MS_VIEW_ID_BYTES] = {101};
    req.high_priority = true;
    ms_view_on_message(view, high, &req, 0);
    assert_true(ms_view_is_active(view, high));
    assert_int_equal(ms_view_n_active(view), max);
    int n_disconnect = 0, n_unlink = 0;
    while (ms_view_next_action(view, &act)) {
        if (act.kind == MS_VIEW_ACTION_SEND &&
            act.msg.kind == MS_VIEW_MSG_DISCONNECT)
            n_disconnect++;
        if (act.kind == MS_VIEW_ACTION_UNLINK)
            n_unlink++;
    }
    assert_int_equal(n_disconnect, 1);
    assert_int_equal(n_unlink, 1);
    //  DISCONNECT from an active member: it moves to passive
    const uint8_t *member = ms_view_active(view, 0);
    uint8_t m[MS_VIEW_ID_BYTES];
    memcpy(m, member, sizeof m);
    ms_view_msg_t disc = {.kind = MS_VIEW_MSG_DISCONNECT};
    ms_view_on_message(view, m, &disc, 0);
    assert_false(ms_view_is_active(view, m));
    assert_true(ms_view_is_passive(view, m));
    ms_view_destroy(&view);
}

//  --------------------------------------------------------------------------
//  1000 nodes: bounded active views, connected overlay, and still
//  connected after 20% of the nodes fail

static void
test_hyparview_1000_nodes(void **state)
{
    (void) state;
    const int n = 1000;
    sim_t *sim = s_sim_new(n, n, 5000);
    //  each node joins through a random earlier node
    srand(7);
    for (int i = 1; i < n; i++) {
        int contact = rand() % i;
        ms_view_on_discovered(sim->views[i], sim->ids[contact], sim->now_ms);
        s_sim_run(sim);
    }
    for (int r = 0; r < 30; r++)
        s_sim_round(sim, 1000);
    int max = ms_view_active_max(sim->views[0]);
    assert_int_equal(max, 18);
    long sum = 0;
    for (int i = 0; i < n; i++) {
        int a = ms_view_n_active(sim->views[i]);
        assert_true(a >= 1);
        assert_true(a <= max);
        sum += a;
        assert_true(ms_view_n_passive(sim->views[i]) <=
                    max * MS_VIEW_PASSIVE_FACTOR);
    }
    assert_true(sum / n >= 4);
    assert_int_equal(s_sim_reachable(sim), n);
    //  shuffles filled the passive views
    long passive_sum = 0;
    for (int i = 0; i < n; i++)
        passive_sum += ms_view_n_passive(sim->views[i]);
    assert_true(passive_sum / n >= 10);

    //  20% fail at once; their neighbors' links go down
    int n_dead = 0;
    for (int i = 0; i < n; i++)
        if (rand() % 5 == 0) {
            sim->dead[i] = true;
            n_dead++;
        }
    assert_true(n_dead > 150);
    for (int i = 0; i < n; i++) {
        if (sim->dead[i])
            continue;
        for (int j = 0; j < n; j++)
            if (sim->dead[j] && ms_view_is_active(sim->views[i], sim->ids[j]))
                ms_view_on_link_down(sim->views[i], sim->ids[j], sim->now_ms);
    }
    s_sim_run(sim);
    for (int r = 0; r < 20; r++)
        s_sim_round(sim, 1000);
    assert_int_equal(s_sim_reachable(sim), n - n_dead);
    for (int i = 0; i < n; i++) {
        if (sim->dead[i])
            continue;
        assert_true(ms_view_n_active(sim->views[i]) <= max);
        assert_true(ms_view_n_active(sim->views[i]) >= 1);
        for (int k = 0; k < ms_view_n_active(sim->views[i]); k++)
            assert_false(sim->dead[s_index(ms_view_active(sim->views[i], k))]);
    }
    s_sim_destroy(&sim);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_discovered_actions),
        cmocka_unit_test(test_active_max),
        cmocka_unit_test(test_neighbor_priority),
        cmocka_unit_test(test_full_mesh_under_16),
        cmocka_unit_test(test_full_mesh_through_one_contact),
        cmocka_unit_test(test_hyparview_1000_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
