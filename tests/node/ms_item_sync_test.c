/*  =========================================================================
    ms_item_sync_test - the node's side of the authority items: join
    (the store's items, our chain), ITEMS pushed on, two sets reconciled
    by digest and list, the list rate limit, revocations, the API's text
    forms, and nothing done before a join

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Each node is an ms_item_sync over a real store (tests/support) and a
    real members table; the fake iface queues what the class sends
    (deep copies) so a test delivers it to the addressed node by hand,
    and records revocations.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_authority_item.h"
#include "ms_cert.h"
#include "ms_item_sync.h"
#include "ms_items.h"
#include "ms_items_fixture.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_store_payload.h"
#include "ms_store_fixture.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_SENT 64
#define S_MAX_BATCH 16

//  One envelope the class sent, copied.
typedef struct {
    uint8_t from[32], to[32];
    int body;
    uint8_t digest[32]; // ITEM_DIGEST
    size_t n_list;      // ITEM_LIST
    uint8_t list[S_MAX_BATCH][32];
    size_t n_items; // ITEMS
    uint8_t items[S_MAX_BATCH][MS_ITEMS_MAX_BYTES];
    size_t item_len[S_MAX_BATCH];
} s_sent_t;

//  A node under test.
typedef struct s_node {
    uint8_t pk[32];
    ms_store_t *store;
    ms_members_t *members;
    ms_item_sync_t *sync;
    uint8_t peers[4][32]; // its push targets
    int n_peers;
    s_sent_t *sent; // queue shared by the nodes of a test
    size_t *n_sent;
    size_t n_revoke_calls, n_revoked_calls;
    uint8_t revoked_subject[32];
    bool revoked_self;
} s_node_t;

static s_sent_t s_queue[S_MAX_SENT];
static size_t s_n_queue;

//  --------------------------------------------------------------------------
//  The fake iface.

static void
s_send(void *arg, const uint8_t to[32], const ms_wire_envelope_t *env)
{
    s_node_t *n = arg;
    assert_true(*n->n_sent < S_MAX_SENT);
    s_sent_t *s = &n->sent[(*n->n_sent)++];
    memset(s, 0, sizeof *s);
    memcpy(s->from, n->pk, 32);
    memcpy(s->to, to, 32);
    s->body = env->body;
    if (env->body == MS_WIRE_BODY_ITEM_DIGEST)
        memcpy(s->digest, env->item_digest.digest, 32);
    else if (env->body == MS_WIRE_BODY_ITEM_LIST) {
        assert_true(env->item_list.n_digests <= S_MAX_BATCH);
        s->n_list = env->item_list.n_digests;
        memcpy(s->list, env->item_list.digests, s->n_list * 32);
    } else if (env->body == MS_WIRE_BODY_ITEMS) {
        assert_true(env->items.n_items <= S_MAX_BATCH);
        s->n_items = env->items.n_items;
        for (size_t i = 0; i < s->n_items; i++) {
            s->item_len[i] = env->items.items[i].n_bytes;
            memcpy(s->items[i], env->items.items[i].bytes, s->item_len[i]);
        }
    }
}

static int
s_active(void *arg, uint8_t (*out)[32], int max)
{
    s_node_t *n = arg;
    int k = 0;
    for (; k < n->n_peers && k < max; k++)
        memcpy(out[k], n->peers[k], 32);
    return k;
}

static void
s_revoke(void *arg, const uint8_t subject[32], const ms_members_cut_t *cut)
{
    s_node_t *n = arg;
    n->n_revoke_calls++;
    ms_members_revoke(n->members, subject, cut); // as ms_mesh_revoke does
}

static void
s_revoked(void *arg, const uint8_t subject[32], bool self_revoked)
{
    s_node_t *n = arg;
    n->n_revoked_calls++;
    memcpy(n->revoked_subject, subject, 32);
    n->revoked_self = self_revoked;
}

//  --------------------------------------------------------------------------
//  Helpers: chains and their items.

static size_t
s_chain_item(uint8_t *out, const ms_if_pool_t *p, uint8_t node_pk[32],
             const char *op)
{
    ms_cert_chain_t chain;
    ms_if_chain(&chain, p, node_pk, true, op);
    size_t n = ms_items_encode_chain(&chain, out);
    assert_true(n > 1);
    return n;
}

//  An ITEMS envelope of one item (bytes, n), into *env and *wi.
static void
s_items_env(ms_wire_envelope_t *env, ms_wire_item_t *wi, uint8_t *bytes,
            size_t n)
{
    wi->bytes = bytes;
    wi->n_bytes = n;
    memset(env, 0, sizeof *env);
    env->protocol = MS_PROTOCOL_VERSION;
    env->body = MS_WIRE_BODY_ITEMS;
    env->items.items = wi;
    env->items.n_items = 1;
}

//  --------------------------------------------------------------------------
//  A node of pool p over a fresh store; joined with its own chain
//  (operator op) when join.

static void
s_node_open(s_node_t *n, ms_sf_t *fx, const ms_if_pool_t *p, const char *op,
            bool join)
{
    memset(n, 0, sizeof *n);
    ms_cert_chain_t chain;
    ms_if_chain(&chain, p, n->pk, true, op);
    n->store = ms_sf_open(fx, NULL, 4 << 20);
    n->members = ms_members_new(p->pk, p->pool_id);
    assert_non_null(n->members);
    n->sent = s_queue;
    n->n_sent = &s_n_queue;
    ms_item_sync_config_t cfg = {.store = n->store};
    memcpy(cfg.node_pk, n->pk, 32);
    ms_item_sync_iface_t iface = {.arg = n,
                                  .send = s_send,
                                  .active_peers = s_active,
                                  .revoke = s_revoke,
                                  .revoked = s_revoked};
    n->sync = ms_item_sync_new(&cfg, &iface);
    assert_non_null(n->sync);
    if (join)
        assert_int_equal(ms_item_sync_join(n->sync, n->members, p->pk, &chain),
                         MS_OK);
}

static void
s_node_close(s_node_t *n)
{
    ms_item_sync_destroy(&n->sync);
    assert_null(n->sync);
    ms_members_destroy(&n->members);
    ms_store_destroy(&n->store);
}

//  Deliver the oldest queued envelope to the node it names (among
//  nodes[0..k)). Returns false when the queue is empty.
static bool
s_deliver(s_node_t **nodes, int k, int64_t now)
{
    if (s_n_queue == 0)
        return false;
    s_sent_t s = s_queue[0];
    memmove(s_queue, s_queue + 1, (s_n_queue - 1) * sizeof *s_queue);
    s_n_queue--;
    ms_wire_envelope_t env = {.protocol = MS_PROTOCOL_VERSION, .body = s.body};
    ms_wire_item_t items[S_MAX_BATCH];
    if (s.body == MS_WIRE_BODY_ITEM_DIGEST)
        memcpy(env.item_digest.digest, s.digest, 32);
    else if (s.body == MS_WIRE_BODY_ITEM_LIST) {
        env.item_list.digests = s.list;
        env.item_list.n_digests = s.n_list;
    } else {
        for (size_t i = 0; i < s.n_items; i++) {
            items[i].bytes = s.items[i];
            items[i].n_bytes = s.item_len[i];
        }
        env.items.items = items;
        env.items.n_items = s.n_items;
    }
    for (int i = 0; i < k; i++)
        if (memcmp(nodes[i]->pk, s.to, 32) == 0)
            ms_item_sync_on_message(nodes[i]->sync, s.from, &env, now);
    return true;
}

//  Items in a store.
static int
s_count_one(void *arg, const uint8_t *digest, const uint8_t *bytes, size_t n)
{
    (void) digest, (void) bytes, (void) n;
    (*(size_t *) arg)++;
    return 0;
}

static size_t
s_stored(ms_store_t *store)
{
    size_t n = 0;
    assert_int_equal(ms_store_items(store, s_count_one, &n), MS_OK);
    return n;
}

static ms_item_sync_stats_t
s_stats(const s_node_t *n)
{
    ms_item_sync_stats_t st;
    ms_item_sync_stats(n->sync, &st);
    return st;
}

static int
s_setup(void **state)
{
    s_n_queue = 0;
    return ms_sf_setup(state, "ms_item_sync_test");
}

//  --------------------------------------------------------------------------
//  Join holds our own chain (stored, not pushed); a second join over the
//  same store loads the stored items again, skipping one that does not
//  check, and the members table learns the stored chains' operators.

static void
test_join_loads_the_store(void **state)
{
    ms_if_pool_t p;
    ms_if_pool(&p);
    s_node_t a;
    s_node_open(&a, *state, &p, "alice", true);
    assert_int_equal(s_stats(&a).n_items, 1);
    assert_int_equal(s_stats(&a).n_added, 1);
    assert_int_equal(s_stored(a.store), 1);
    assert_int_equal(s_n_queue, 0); // our chain is not pushed at join

    //  a peer's chain, and a forged item written straight to the store
    uint8_t buf[MS_ITEMS_MAX_BYTES], bob[32];
    size_t n = s_chain_item(buf, &p, bob, "bob");
    ms_wire_item_t wi;
    ms_wire_envelope_t env;
    s_items_env(&env, &wi, buf, n);
    uint8_t peer[32] = {9};
    ms_item_sync_on_message(a.sync, peer, &env, 1000);
    assert_int_equal(s_stats(&a).n_items, 2);
    ms_if_pool_t other;
    ms_if_pool(&other);
    uint8_t forged[MS_ITEMS_MAX_BYTES], carol[32];
    size_t nf = s_chain_item(forged, &other, carol, "carol");
    ms_hash_t fd;
    ms_hash_bytes(forged, nf, &fd);
    assert_int_equal(
        ms_store_put_item(a.store, fd.bytes, forged, nf, NULL, NULL, NULL),
        MS_OK);
    assert_int_equal(s_stored(a.store), 3);

    //  leave, then join again: the store's two good items (bob's and
    //  ours), our chain known already
    ms_item_sync_leave(a.sync);
    ms_members_destroy(&a.members);
    a.members = ms_members_new(p.pk, p.pool_id);
    assert_int_equal(s_stats(&a).n_items, 0);
    ms_cert_chain_t chain;
    ms_if_chain(&chain, &p, a.pk, false, "alice");
    assert_int_equal(ms_item_sync_join(a.sync, a.members, p.pk, &chain), MS_OK);
    assert_int_equal(s_stats(&a).n_items, 2);
    assert_string_equal(ms_members_operator(a.members, bob), "bob");
    assert_null(ms_members_operator(a.members, carol));
    s_node_close(&a);
}

//  --------------------------------------------------------------------------
//  ITEMS from a peer: a new item is kept and pushed to the other push
//  targets (not back to its sender); a known one costs nothing; a bad
//  one is refused and counted.

static void
test_items_pushed_on(void **state)
{
    ms_if_pool_t p;
    ms_if_pool(&p);
    s_node_t a;
    s_node_open(&a, *state, &p, "alice", true);
    uint8_t from[32] = {1}, other[32] = {2};
    memcpy(a.peers[0], from, 32);
    memcpy(a.peers[1], other, 32);
    a.n_peers = 2;

    uint8_t buf[MS_ITEMS_MAX_BYTES], bob[32];
    size_t n = s_chain_item(buf, &p, bob, "bob");
    ms_wire_item_t wi;
    ms_wire_envelope_t env;
    s_items_env(&env, &wi, buf, n);
    ms_item_sync_on_message(a.sync, from, &env, 1000);
    assert_int_equal(s_stats(&a).n_added, 2); // ours at join, bob's
    assert_int_equal(s_stored(a.store), 2);
    assert_int_equal(s_n_queue, 1);
    assert_memory_equal(s_queue[0].to, other, 32);
    assert_int_equal(s_queue[0].body, MS_WIRE_BODY_ITEMS);
    assert_int_equal(s_queue[0].n_items, 1);
    assert_memory_equal(s_queue[0].items[0], buf, n);
    assert_string_equal(ms_members_operator(a.members, bob), "bob");

    s_n_queue = 0;
    ms_item_sync_on_message(a.sync, from, &env, 1000); // known
    assert_int_equal(s_n_queue, 0);
    assert_int_equal(s_stats(&a).n_added, 2);

    buf[n - 1] ^= 1; // the signature no longer verifies
    ms_item_sync_on_message(a.sync, from, &env, 1000);
    assert_int_equal(s_stats(&a).n_refused, 1);
    assert_int_equal(s_stats(&a).n_items, 2);
    assert_int_equal(s_n_queue, 0);
    s_node_close(&a);
}

//  --------------------------------------------------------------------------
//  Two nodes with different sets converge through one exchange started
//  by a digest round; a second digest soon after is not answered with a
//  second list (rate limit), one a gap later is.

static void
test_reconcile_by_digest(void **state)
{
    ms_if_pool_t p;
    ms_if_pool(&p);
    s_node_t a, b;
    s_node_open(&a, *state, &p, "alice", true);
    s_node_open(&b, *state, &p, "bob", true);
    memcpy(a.peers[0], b.pk, 32);
    a.n_peers = 1;
    uint8_t buf[MS_ITEMS_MAX_BYTES], carol[32];
    size_t n = s_chain_item(buf, &p, carol, "carol");
    ms_wire_item_t wi;
    ms_wire_envelope_t env;
    s_items_env(&env, &wi, buf, n);
    uint8_t stranger[32] = {7};
    ms_item_sync_on_message(a.sync, stranger, &env, 0);
    s_n_queue = 0; // a holds {alice, carol}, b holds {bob}

    ms_item_sync_tick(a.sync, 5000);
    assert_int_equal(s_n_queue, 1);
    assert_int_equal(s_queue[0].body, MS_WIRE_BODY_ITEM_DIGEST);
    ms_item_sync_tick(a.sync, 5001); // the round is not due yet
    assert_int_equal(s_n_queue, 1);
    memcpy(b.peers[0], a.pk, 32); // b pushes what it learns to a only
    b.n_peers = 1;
    s_node_t *nodes[] = {&a, &b};
    int steps = 0;
    while (s_deliver(nodes, 2, 5000))
        assert_true(++steps < 20);
    assert_int_equal(s_stats(&a).n_items, 3);
    assert_int_equal(s_stats(&b).n_items, 3);
    assert_string_equal(ms_members_operator(b.members, carol), "carol");
    assert_string_equal(ms_members_operator(a.members, b.pk), "bob");

    //  equal now: a digest is not answered
    ms_item_sync_tick(a.sync, 5000 + MS_ITEM_SYNC_ROUND_MS);
    assert_int_equal(s_n_queue, 1);
    ms_item_sync_on_message(b.sync, a.pk, &env, 7000); // (known item)
    assert_true(s_deliver(nodes, 2, 7000));
    assert_int_equal(s_n_queue, 0);

    //  a differing digest: a list, then none within the gap, then again
    ms_wire_envelope_t dig = {.protocol = MS_PROTOCOL_VERSION,
                              .body = MS_WIRE_BODY_ITEM_DIGEST};
    memset(dig.item_digest.digest, 0xab, 32);
    ms_item_sync_on_message(b.sync, stranger, &dig, 10000);
    assert_int_equal(s_n_queue, 1);
    assert_int_equal(s_queue[0].body, MS_WIRE_BODY_ITEM_LIST);
    assert_int_equal(s_queue[0].n_list, 3);
    ms_item_sync_on_message(b.sync, stranger, &dig,
                            10000 + MS_ITEM_SYNC_LIST_GAP_MS - 1);
    assert_int_equal(s_n_queue, 1);
    ms_item_sync_on_message(b.sync, stranger, &dig,
                            10000 + MS_ITEM_SYNC_LIST_GAP_MS);
    assert_int_equal(s_n_queue, 2);
    s_node_close(&a);
    s_node_close(&b);
}

//  --------------------------------------------------------------------------
//  A revocation of another node goes to the mesh (iface.revoke) and the
//  node (revoked, not self); one of this node is applied to the members
//  table only; both are counted, and a link up sends our digest.

static void
test_revocation(void **state)
{
    ms_if_pool_t p;
    ms_if_pool(&p);
    s_node_t a;
    s_node_open(&a, *state, &p, "alice", true);
    uint8_t buf[MS_ITEMS_MAX_BYTES], bob[32];
    size_t n = s_chain_item(buf, &p, bob, "bob");
    ms_wire_item_t wi;
    ms_wire_envelope_t env;
    s_items_env(&env, &wi, buf, n);
    uint8_t from[32] = {1};
    ms_item_sync_on_message(a.sync, from, &env, 0);
    assert_true(ms_members_is_member(a.members, bob, 0));

    wi.n_bytes = ms_if_revoke_item(buf, &p, bob);
    ms_item_sync_on_message(a.sync, from, &env, 0);
    assert_int_equal(a.n_revoke_calls, 1);
    assert_int_equal(a.n_revoked_calls, 1);
    assert_memory_equal(a.revoked_subject, bob, 32);
    assert_false(a.revoked_self);
    assert_false(ms_members_is_member(a.members, bob, 0));
    assert_int_equal(ms_members_find(a.members, bob)->state, MS_MEMBER_REVOKED);
    assert_int_equal(s_stats(&a).n_revocations, 1);

    wi.n_bytes = ms_if_revoke_item(buf, &p, a.pk);
    ms_item_sync_on_message(a.sync, from, &env, 0);
    assert_int_equal(a.n_revoke_calls, 1); // not the mesh
    assert_int_equal(a.n_revoked_calls, 2);
    assert_true(a.revoked_self);
    assert_int_equal(ms_members_find(a.members, a.pk)->state,
                     MS_MEMBER_REVOKED);
    assert_int_equal(s_stats(&a).n_revocations, 2);
    assert_int_equal(s_stats(&a).n_items, 4);

    s_n_queue = 0;
    ms_item_sync_link_up(a.sync, from);
    assert_int_equal(s_n_queue, 1);
    assert_int_equal(s_queue[0].body, MS_WIRE_BODY_ITEM_DIGEST);
    assert_memory_equal(s_queue[0].to, from, 32);
    s_node_close(&a);
}

//  --------------------------------------------------------------------------
//  The API's two text forms: taken and summarised (new, then known);
//  bad base64 and another authority's bundle refused and counted; a body
//  of neither form refused, not counted.

static void
test_post_text(void **state)
{
    ms_if_pool_t p, other;
    ms_if_pool(&p);
    ms_if_pool(&other);
    s_node_t a;
    s_node_open(&a, *state, &p, "alice", true);
    uint8_t buf[MS_ITEMS_MAX_BYTES], bob[32], bob_sk[64];
    assert_int_equal(ms_cert_keypair(bob, bob_sk), MS_OK);
    size_t n = ms_if_revoke_item(buf, &p, bob);
    char text[4096];
    strcpy(text, "meshsweep-authority-item-v1 ");
    sodium_bin2base64(text + strlen(text), sizeof text - strlen(text), buf + 1,
                      n - 1, sodium_base64_VARIANT_ORIGINAL);
    strcat(text, "\n");
    char *summary = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(
        ms_item_sync_post(a.sync, text, strlen(text), &summary, &diag), MS_OK);
    assert_non_null(strstr(summary, "\"type\":\"authority-item\""));
    assert_non_null(strstr(summary, "\"new\":true"));
    free(summary);
    assert_int_equal(
        ms_item_sync_post(a.sync, text, strlen(text), &summary, &diag), MS_OK);
    assert_non_null(strstr(summary, "\"new\":false"));
    free(summary);
    assert_int_equal(s_stats(&a).n_revocations, 1);

    //  a certificate bundle of our authority
    ms_cert_chain_t chain;
    uint8_t carol[32];
    ms_if_chain(&chain, &p, carol, true, "carol");
    uint8_t enc[MS_CERT_CHAIN_MAX_BYTES];
    size_t ne = ms_cert_chain_encode(&chain, enc);
    char hex[65];
    sodium_bin2hex(hex, sizeof hex, p.pk, 32);
    snprintf(text, sizeof text, "meshsweep-cert-v1 %s ", hex);
    sodium_bin2base64(text + strlen(text), sizeof text - strlen(text), enc, ne,
                      sodium_base64_VARIANT_ORIGINAL);
    assert_int_equal(
        ms_item_sync_post(a.sync, text, strlen(text), &summary, &diag), MS_OK);
    assert_non_null(strstr(summary, "\"type\":\"certificate\""));
    free(summary);
    assert_string_equal(ms_members_operator(a.members, carol), "carol");

    //  the same bundle naming another authority
    sodium_bin2hex(hex, sizeof hex, other.pk, 32);
    memcpy(text + strlen("meshsweep-cert-v1 "), hex, 64);
    assert_int_equal(
        ms_item_sync_post(a.sync, text, strlen(text), &summary, &diag),
        MS_ERR_UNTRUSTED);
    assert_int_equal(s_stats(&a).n_refused, 1);
    const char *bad = "meshsweep-authority-item-v1 !!!not base64!!!";
    assert_int_equal(
        ms_item_sync_post(a.sync, bad, strlen(bad), &summary, &diag),
        MS_ERR_INVALID);
    assert_int_equal(s_stats(&a).n_refused, 2);
    const char *junk = "hello";
    assert_int_equal(
        ms_item_sync_post(a.sync, junk, strlen(junk), &summary, &diag),
        MS_ERR_INVALID);
    assert_int_equal(s_stats(&a).n_refused, 2);
    s_node_close(&a);
}

//  --------------------------------------------------------------------------
//  Before a join (open pool, alone) nothing is answered or sent, and an
//  item posted is unsupported; a join without a chain stays unjoined.

static void
test_not_joined(void **state)
{
    ms_if_pool_t p;
    ms_if_pool(&p);
    s_node_t a;
    s_node_open(&a, *state, &p, "alice", false);
    uint8_t peer[32] = {3};
    memcpy(a.peers[0], peer, 32);
    a.n_peers = 1;
    ms_wire_envelope_t dig = {.protocol = MS_PROTOCOL_VERSION,
                              .body = MS_WIRE_BODY_ITEM_DIGEST};
    ms_item_sync_on_message(a.sync, peer, &dig, 0);
    ms_item_sync_tick(a.sync, 100000);
    ms_item_sync_link_up(a.sync, peer);
    assert_int_equal(s_n_queue, 0);
    assert_int_equal(ms_item_sync_join(a.sync, a.members, p.pk, NULL), MS_OK);
    ms_item_sync_tick(a.sync, 200000);
    assert_int_equal(s_n_queue, 0);

    uint8_t buf[MS_ITEMS_MAX_BYTES];
    size_t n = ms_if_revoke_item(buf, &p, peer);
    char text[4096];
    strcpy(text, "meshsweep-authority-item-v1 ");
    sodium_bin2base64(text + strlen(text), sizeof text - strlen(text), buf + 1,
                      n - 1, sodium_base64_VARIANT_ORIGINAL);
    char *summary = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(
        ms_item_sync_post(a.sync, text, strlen(text), &summary, &diag),
        MS_ERR_UNSUPPORTED);
    assert_null(summary);
    assert_int_equal(s_stats(&a).n_items, 0);
    assert_int_equal(s_stored(a.store), 0);
    s_node_close(&a);
}

int
main(void)
{
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_join_loads_the_store, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_items_pushed_on, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_reconcile_by_digest, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_revocation, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_post_text, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_not_joined, s_setup,
                                        ms_sf_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
