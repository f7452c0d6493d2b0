/*  =========================================================================
    ms_peer_table_test - the peers as the mesh reported them: what each
    report changed, and the lists (members with self first, live,
    reachable, active) after a sequence of peer events

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_err.h"
#include "ms_peer_table.h"

#include <stdlib.h>
#include <string.h>

#define ID_BYTES MS_PEER_TABLE_ID_BYTES

//  An id filled with TAG.
static void
s_id(uint8_t id[ID_BYTES], uint8_t tag)
{
    memset(id, tag, ID_BYTES);
}

//  Whether LIST (N ids) is exactly the ids of TAGS (in that order).
static void
s_assert_list(const uint8_t (*list)[ID_BYTES], size_t n, const uint8_t *tags,
              size_t n_tags)
{
    assert_int_equal(n, n_tags);
    for (size_t i = 0; i < n; i++) {
        uint8_t want[ID_BYTES];
        s_id(want, tags[i]);
        assert_memory_equal(list[i], want, ID_BYTES);
    }
}

//  --------------------------------------------------------------------------
//  An empty table: members are this node alone; no live, reachable or
//  active peers.

static void
test_empty(void **state)
{
    (void) state;
    uint8_t me[ID_BYTES];
    s_id(me, 0xee);
    ms_peer_table_t *t = ms_peer_table_new(me);
    assert_non_null(t);
    assert_int_equal(ms_peer_table_size(t), 0);
    uint8_t(*list)[ID_BYTES] = NULL;
    size_t n = ms_peer_table_members(t, &list);
    s_assert_list((const uint8_t(*)[ID_BYTES]) list, n, (uint8_t[]){0xee}, 1);
    free(list);
    n = ms_peer_table_live(t, &list);
    assert_int_equal(n, 0);
    assert_non_null(list); // an empty array, not NULL
    free(list);
    n = ms_peer_table_reachable(t, &list);
    assert_int_equal(n, 0);
    assert_null(list);
    uint8_t active[4][ID_BYTES];
    assert_int_equal(ms_peer_table_active(t, active, 4), 0);
    ms_peer_table_destroy(&t);
    assert_null(t);
    ms_peer_table_destroy(&t); // NULL-safe
}

//  --------------------------------------------------------------------------
//  What each report changed: appears (-1), state changes, up and down.

static void
test_changes(void **state)
{
    (void) state;
    uint8_t me[ID_BYTES], a[ID_BYTES];
    s_id(me, 0xee);
    s_id(a, 0x0a);
    ms_peer_table_t *t = ms_peer_table_new(me);
    ms_peer_table_change_t ch;

    // First heard, alive but the link not up yet: appears, not up.
    assert_int_equal(ms_peer_table_update(t, a, MS_PEER_ALIVE, false, &ch),
                     MS_OK);
    assert_int_equal(ch.previous, -1);
    assert_false(ch.was_up);
    assert_false(ch.up);
    assert_int_equal(ms_peer_table_size(t), 1);

    // The link comes up: same state, now up.
    ms_peer_table_update(t, a, MS_PEER_ALIVE, true, &ch);
    assert_int_equal(ch.previous, MS_PEER_ALIVE);
    assert_false(ch.was_up);
    assert_true(ch.up);

    // Suspect with the link up: down (not alive), still reachable.
    ms_peer_table_update(t, a, MS_PEER_SUSPECT, true, &ch);
    assert_int_equal(ch.previous, MS_PEER_ALIVE);
    assert_true(ch.was_up);
    assert_false(ch.up);

    // Dead: a state change, never up.
    ms_peer_table_update(t, a, MS_PEER_DEAD, false, &ch);
    assert_int_equal(ch.previous, MS_PEER_SUSPECT);
    assert_false(ch.was_up);
    assert_false(ch.up);
    assert_int_equal(ms_peer_table_size(t), 1); // a dead peer stays

    // A first report of dead: appears as dead, previous -1.
    uint8_t b[ID_BYTES];
    s_id(b, 0x0b);
    ms_peer_table_update(t, b, MS_PEER_DEAD, false, NULL); // change optional
    assert_int_equal(ms_peer_table_size(t), 2);
    ms_peer_table_update(t, b, MS_PEER_DEAD, false, &ch);
    assert_int_equal(ch.previous, MS_PEER_DEAD);
    ms_peer_table_destroy(&t);
}

//  --------------------------------------------------------------------------
//  A sequence of peer events and the lists after it: members are self
//  then the up peers, live the up peers, reachable and active the linked
//  not dead ones (suspect included), all in order of first report.

static void
test_lists_after_events(void **state)
{
    (void) state;
    uint8_t me[ID_BYTES], a[ID_BYTES], b[ID_BYTES], c[ID_BYTES], d[ID_BYTES];
    s_id(me, 0xee);
    s_id(a, 0x0a);
    s_id(b, 0x0b);
    s_id(c, 0x0c);
    s_id(d, 0x0d);
    ms_peer_table_t *t = ms_peer_table_new(me);
    ms_peer_table_update(t, a, MS_PEER_ALIVE, true, NULL);   // up
    ms_peer_table_update(t, b, MS_PEER_ALIVE, true, NULL);   // up
    ms_peer_table_update(t, c, MS_PEER_ALIVE, false, NULL);  // not linked
    ms_peer_table_update(t, d, MS_PEER_ALIVE, true, NULL);   // up
    ms_peer_table_update(t, b, MS_PEER_SUSPECT, true, NULL); // suspect
    ms_peer_table_update(t, d, MS_PEER_DEAD, true, NULL);    // dead, linked

    uint8_t(*list)[ID_BYTES] = NULL;
    size_t n = ms_peer_table_members(t, &list);
    s_assert_list((const uint8_t(*)[ID_BYTES]) list, n, (uint8_t[]){0xee, 0x0a},
                  2);
    free(list);
    n = ms_peer_table_live(t, &list);
    s_assert_list((const uint8_t(*)[ID_BYTES]) list, n, (uint8_t[]){0x0a}, 1);
    free(list);
    n = ms_peer_table_reachable(t, &list);
    s_assert_list((const uint8_t(*)[ID_BYTES]) list, n, (uint8_t[]){0x0a, 0x0b},
                  2);
    free(list);
    uint8_t active[4][ID_BYTES];
    int na = ms_peer_table_active(t, active, 4);
    s_assert_list((const uint8_t(*)[ID_BYTES]) active, (size_t) na,
                  (uint8_t[]){0x0a, 0x0b}, 2);

    // c links, b comes back, a dies: the order stays that of first report.
    ms_peer_table_update(t, c, MS_PEER_ALIVE, true, NULL);
    ms_peer_table_update(t, b, MS_PEER_ALIVE, true, NULL);
    ms_peer_table_update(t, a, MS_PEER_DEAD, false, NULL);
    n = ms_peer_table_members(t, &list);
    s_assert_list((const uint8_t(*)[ID_BYTES]) list, n,
                  (uint8_t[]){0xee, 0x0b, 0x0c}, 3);
    free(list);
    n = ms_peer_table_live(t, &list);
    s_assert_list((const uint8_t(*)[ID_BYTES]) list, n, (uint8_t[]){0x0b, 0x0c},
                  2);
    free(list);
    n = ms_peer_table_reachable(t, &list);
    s_assert_list((const uint8_t(*)[ID_BYTES]) list, n, (uint8_t[]){0x0b, 0x0c},
                  2);
    free(list);
    ms_peer_table_destroy(&t);
}

//  --------------------------------------------------------------------------
//  active stops at MAX: the first MAX reachable peers.

static void
test_active_max(void **state)
{
    (void) state;
    uint8_t me[ID_BYTES];
    s_id(me, 0xee);
    ms_peer_table_t *t = ms_peer_table_new(me);
    for (uint8_t tag = 1; tag <= 5; tag++) {
        uint8_t id[ID_BYTES];
        s_id(id, tag);
        ms_peer_table_update(t, id, tag == 2 ? MS_PEER_DEAD : MS_PEER_SUSPECT,
                             true, NULL);
    }
    uint8_t active[3][ID_BYTES];
    int n = ms_peer_table_active(t, active, 3);
    s_assert_list((const uint8_t(*)[ID_BYTES]) active, (size_t) n,
                  (uint8_t[]){1, 3, 4}, 3);
    assert_int_equal(ms_peer_table_active(t, active, 0), 0);
    ms_peer_table_destroy(&t);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_changes),
        cmocka_unit_test(test_lists_after_events),
        cmocka_unit_test(test_active_max),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
