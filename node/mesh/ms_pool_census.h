/*  =========================================================================
    ms_pool_census - who counts in the pool as this node sees it, told to
    the store: the member count (failure rule) and the operators
    (verification)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Verification" and "Failures". Two of the store's rules
    count the pool, and the pool is this node's view of it: itself and
    its alive, linked peers.
    - The failure rule (a task fails once failures from min(3, members)
      nodes are in) counts members: ms_store_set_member_count.
    - Verification counts operators, not nodes. With an authority the
      operator of each member is its certificate's (ms_members_operator;
      ours is ms_authority_operator): each is stored
      (ms_store_set_operator), so verdicts are a function of stored
      data, and the pool's operator count is the number of distinct
      names among us and the alive linked peers. In an open pool every
      node is its own operator: nothing is stored, and the count is 1 +
      the alive linked peers. The count goes to ms_store_set_pool_operators,
      which re-derives the verdicts (slots per task change with it).
    The class keeps the two figures last given to the store, so each is
    written only when it changes (a write re-derives), and stays at the
    old figure when the store refuses it (the next update tries again).
    At most MS_POOL_CENSUS_MAX_OPERATORS distinct operators are counted.

    Why a class of its own rather than part of ms_members: the members
    table is the admission table (who may link, under which certificate)
    and has no notion of liveness or of the store; the census is the
    join of the two (the table's operators, the mesh's live peers) into
    the store's inputs. The peer table (state and link of each peer) is
    ms_peer_table, fed by the node's mesh handler: the node hands the
    census its live peers at each update. The class never includes ms_node.h.

    Threads: the node's loop thread calls every function, except
    ms_pool_census_operators, which any thread may call (the node's
    status page reads it on an HTTP thread; it is a relaxed atomic).
*/
#ifndef MS_POOL_CENSUS_H
#define MS_POOL_CENSUS_H

#include "ms_members.h"
#include "ms_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_pool_census ms_pool_census_t;

#define MS_POOL_CENSUS_ID_BYTES 32      // node ids
#define MS_POOL_CENSUS_MAX_OPERATORS 64 // distinct operators counted at most

//  Make the census of the node NODE_PK (MS_POOL_CENSUS_ID_BYTES, copied)
//  over STORE (borrowed; it outlives the census), alone: the store's
//  member count is set to 1 now, its operator count is taken as its
//  default, 1. Returns MS_OK with *OUT set; else *OUT stays NULL and:
//  MS_ERR_NOMEM; the errors of ms_store_set_member_count. Caller owns
//  the result; free it with ms_pool_census_destroy().
int ms_pool_census_open(ms_pool_census_t **out, ms_store_t *store,
                        const uint8_t node_pk[MS_POOL_CENSUS_ID_BYTES]);

//  Free it. NULL-safe; nulls *self_p.
void ms_pool_census_destroy(ms_pool_census_t **self_p);

//  The pool as the node sees it now: PEERS (N_PEERS ids, the alive linked
//  peers, borrowed; itself not among them), MEMBERS (borrowed for the
//  call; NULL when the node has no table: an open pool's rule),
//  OUR_OPERATOR (our certificate's operator name; read only with an
//  authority). Tells the store the member count and, with an authority,
//  every operator, and the pool's operator count, each when it changed
//  (see the prose). Returns true when the operator count changed (the
//  slots per task changed: the scheduler should look again). Store
//  errors leave the old figures (tried again at the next update).
bool ms_pool_census_update(ms_pool_census_t *self, const ms_members_t *members,
                           const char *our_operator,
                           const uint8_t (*peers)[MS_POOL_CENSUS_ID_BYTES],
                           size_t n_peers);

//  The member count last given to the store (1 + alive linked peers).
uint32_t ms_pool_census_members(const ms_pool_census_t *self);

//  The pool's operator count last given to the store (1 at first). Any
//  thread.
uint32_t ms_pool_census_operators(const ms_pool_census_t *self);

#endif
