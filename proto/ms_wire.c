/*  =========================================================================
    ms_wire - every message meshsweep nodes exchange, as plain C structs,
    and the record payloads they carry

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    How it works. Each message has three pieces here: a validity check on
    the C struct (s_<msg>_valid), a C -> protobuf-c conversion that only
    borrows the caller's memory (s_pb_from_<msg>), and a protobuf-c -> C
    conversion that copies everything out of the unpacked message
    (s_<msg>_from_pb). Encoding = check, convert, pack; decoding = size
    limit, unpack, convert, the same check. One check for both directions
    means a struct that encodes also decodes, and a decoded struct obeys
    every rule the header lists.

    Why copy out of the unpacked message instead of handing out
    protobuf-c's own tree: generated names must not leave proto/, ids are
    fixed arrays in our structs (so a wrong length is caught once, here),
    and a caller frees one kind of object.

    Limits. A frame is refused before unpacking when it is over
    MS_MAX_FRAME_BYTES and a record payload when it is over
    MS_WIRE_MAX_PAYLOAD_BYTES, so a hostile peer cannot make protobuf-c
    allocate more than a small multiple of those. protobuf-c returns NULL
    both for malformed input and for out of memory; both become
    MS_ERR_PROTOCOL (a frame we cannot read is dropped either way).

    What protobuf-c does not check and we do: UTF-8 of strings (we refuse
    invalid UTF-8 and overlong/surrogate forms), lengths of bytes fields,
    enumeration values (carried as uint32). A string with an embedded NUL
    is cut at the NUL by protobuf-c (the length is not kept): every node
    reads the same bytes the same way, so this cannot split the pool.
*/
#include "ms_wire.h"

#include "mswire.pb-c.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t s_empty_buf[1] = {0};

//  --------------------------------------------------------------------------
//  True when text (n bytes) is strict UTF-8 without NUL (RFC 3629: no
//  overlong forms, no surrogates, nothing above U+10FFFF).

static bool
s_utf8_valid(const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *) text;
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        uint32_t cp, min;
        if (c == 0)
            return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0) {
            len = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else
            return false;
        if (n - i < len)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  True when s (NULL counts as "") is UTF-8 of at most max bytes, and
//  not empty when nonempty is set.

static bool
s_text_ok(const char *s, size_t max, bool nonempty)
{
    if (!s)
        return !nonempty;
    size_t n = strnlen(s, max + 1);
    if (n > max || (nonempty && n == 0))
        return false;
    return s_utf8_valid(s, n);
}

//  --------------------------------------------------------------------------
//  True when a fixed char array of size cap holds a NUL-terminated UTF-8
//  text (non-empty when asked).

static bool
s_fixed_text_ok(const char *s, size_t cap, bool nonempty)
{
    if (!memchr(s, 0, cap))
        return false;
    return s_text_ok(s, cap - 1, nonempty);
}

//  --------------------------------------------------------------------------
//  True when a fixed endpoint array holds a valid endpoint.

static bool
s_fixed_endpoint_ok(const char *s)
{
    return memchr(s, 0, MS_WIRE_ENDPOINT_MAX + 1) && ms_wire_endpoint_valid(s);
}

//  --------------------------------------------------------------------------
//  True when c is an ASCII letter or digit (locale-independent).

static bool
s_is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

//  --------------------------------------------------------------------------
//  Check an endpoint string: "tcp://HOST:PORT".

bool
ms_wire_endpoint_valid(const char *s)
{
    if (!s)
        return false;
    size_t n = strnlen(s, MS_WIRE_ENDPOINT_MAX + 1);
    if (n > MS_WIRE_ENDPOINT_MAX || n < 6 || memcmp(s, "tcp://", 6) != 0)
        return false;
    const char *host = s + 6;
    const char *colon = strrchr(host, ':');
    if (!colon || colon == host)
        return false;
    const char *port = colon + 1;
    size_t n_port = strlen(port);
    if (n_port < 1 || n_port > 5)
        return false;
    unsigned long value = 0;
    for (size_t i = 0; i < n_port; i++) {
        if (port[i] < '0' || port[i] > '9')
            return false;
        value = value * 10 + (unsigned long) (port[i] - '0');
    }
    if (value < 1 || value > 65535)
        return false;
    size_t n_host = (size_t) (colon - host);
    if (host[0] == '[') {
        if (n_host < 3 || host[n_host - 1] != ']')
            return false;
        for (size_t i = 1; i < n_host - 1; i++) {
            char c = host[i];
            if (!s_is_alnum(c) && c != ':' && c != '.' && c != '%')
                return false;
        }
    } else {
        for (size_t i = 0; i < n_host; i++) {
            char c = host[i];
            if (!s_is_alnum(c) && c != '.' && c != '-' && c != '_')
                return false;
        }
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Copy a 32-byte id out of a protobuf bytes field; false when the
//  length is not exactly MS_WIRE_ID_BYTES.

static bool
s_id_in(uint8_t out[MS_WIRE_ID_BYTES], const ProtobufCBinaryData *b)
{
    if (b->len != MS_WIRE_ID_BYTES || !b->data)
        return false;
    memcpy(out, b->data, MS_WIRE_ID_BYTES);
    return true;
}

//  --------------------------------------------------------------------------
//  A protobuf bytes field that borrows data (n bytes).

static ProtobufCBinaryData
s_bin(const void *data, size_t n)
{
    ProtobufCBinaryData b;
    b.len = n;
    b.data = n ? (uint8_t *) data : NULL;
    return b;
}

//  --------------------------------------------------------------------------
//  A protobuf string field that borrows s (NULL becomes "").

static char *
s_str(const char *s)
{
    return (char *) (s ? s : "");
}

//  --------------------------------------------------------------------------
//  Copy a protobuf bytes field into a fresh buffer, refusing more than max
//  bytes. Returns MS_OK, MS_ERR_PROTOCOL or MS_ERR_NOMEM.

static int
s_bytes_in(const ProtobufCBinaryData *b, size_t max, uint8_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (b->len > max)
        return MS_ERR_PROTOCOL;
    if (b->len == 0)
        return MS_OK;
    if (!b->data)
        return MS_ERR_PROTOCOL;
    *out = malloc(b->len);
    if (!*out)
        return MS_ERR_NOMEM;
    memcpy(*out, b->data, b->len);
    *n = b->len;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Copy a protobuf string into a fresh string, refusing more than max
//  bytes. Returns MS_OK, MS_ERR_PROTOCOL or MS_ERR_NOMEM.

static int
s_text_in(const char *s, size_t max, char **out)
{
    *out = NULL;
    if (!s)
        s = "";
    size_t n = strnlen(s, max + 1);
    if (n > max)
        return MS_ERR_PROTOCOL;
    *out = malloc(n + 1);
    if (!*out)
        return MS_ERR_NOMEM;
    memcpy(*out, s, n + 1);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Copy a protobuf string into a fixed array of cap bytes (NUL included);
//  false when it does not fit.

static bool
s_fixed_in(char *out, size_t cap, const char *s)
{
    if (!s)
        s = "";
    size_t n = strnlen(s, cap);
    if (n >= cap)
        return false;
    memcpy(out, s, n + 1);
    return true;
}

//  --------------------------------------------------------------------------
//  Pack msg into a fresh buffer; MS_ERR_RANGE when it would exceed max.

static int
s_pack(const ProtobufCMessage *msg, size_t max, uint8_t **out, size_t *n)
{
    size_t size = protobuf_c_message_get_packed_size(msg);
    if (size > max)
        return MS_ERR_RANGE;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return MS_ERR_NOMEM;
    size_t written = protobuf_c_message_pack(msg, buf);
    assert(written == size);
    (void) written;
    *out = buf;
    *n = size;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Unpack n bytes as desc, refusing more than max bytes first.

static int
s_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t n,
         size_t max, ProtobufCMessage **msg)
{
    *msg = NULL;
    if (n > max)
        return MS_ERR_PROTOCOL;
    assert(buf || n == 0);
    *msg = protobuf_c_message_unpack(desc, NULL, n, buf ? buf : s_empty_buf);
    return *msg ? MS_OK : MS_ERR_PROTOCOL;
}

//  --------------------------------------------------------------------------
//  Allocate the item and pointer arrays of a repeated message field of n
//  items of item_size bytes; the pointers point at the items.

static int
s_repeated_new(size_t n, size_t item_size, void **items, void ***ptrs)
{
    *items = NULL;
    *ptrs = NULL;
    if (n == 0)
        return MS_OK;
    *items = calloc(n, item_size);
    *ptrs = calloc(n, sizeof(void *));
    if (!*items || !*ptrs) {
        free(*items);
        free(*ptrs);
        *items = NULL;
        *ptrs = NULL;
        return MS_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        (*ptrs)[i] = (uint8_t *) *items + i * item_size;
    return MS_OK;
}

// ===========================================================================
// Envelope: checks on the C struct
// ===========================================================================

//  --------------------------------------------------------------------------
//  True when a HELLO obeys its contract.

static bool
s_hello_valid(const ms_wire_hello_t *h)
{
    return h->protocol_min >= 1 && h->protocol_min <= h->protocol_max &&
           h->mesh_port >= 1 &&
           s_text_ok(h->operator_name, MS_WIRE_NAME_MAX, false) &&
           h->certificate_bytes <= MS_WIRE_MAX_CERTIFICATE_BYTES &&
           (h->certificate || h->certificate_bytes == 0) &&
           memchr(h->endpoint, 0, sizeof h->endpoint) &&
           (!h->endpoint[0] || ms_wire_endpoint_valid(h->endpoint));
}

//  --------------------------------------------------------------------------
//  True when a HEARTBEAT obeys its contract.

static bool
s_heartbeat_valid(const ms_wire_heartbeat_t *h)
{
    if (h->n_live_claims && !h->live_claims)
        return false;
    for (size_t i = 0; i < h->n_live_claims; i++)
        if (h->live_claims[i].epoch < 1)
            return false;
    return h->n_busy <= h->n_workers && isfinite(h->load) && h->load >= 0;
}

//  --------------------------------------------------------------------------
//  True when a VECTOR obeys its contract.

static bool
s_vector_valid(const ms_wire_vector_t *v)
{
    if (v->n_entries && !v->entries)
        return false;
    for (size_t i = 0; i < v->n_entries; i++)
        if (v->entries[i].seq < 1)
            return false;
    return true;
}

//  --------------------------------------------------------------------------
//  True when a BLOCK obeys its contract: 1..64 records, contiguous seqs
//  from first_seq, kinds >= 1, payloads and signature within bounds.

static bool
s_block_valid(const ms_wire_block_t *b)
{
    if (b->first_seq < 1 || b->n_records < 1 ||
        b->n_records > MS_WIRE_BLOCK_MAX_RECORDS || !b->records)
        return false;
    if (b->first_seq > UINT64_MAX - (b->n_records - 1))
        return false;
    for (size_t i = 0; i < b->n_records; i++) {
        const ms_wire_record_t *r = &b->records[i];
        if (r->seq != b->first_seq + i || r->kind < 1 ||
            r->payload_bytes > MS_WIRE_MAX_PAYLOAD_BYTES ||
            (!r->payload && r->payload_bytes))
            return false;
    }
    return b->signature_bytes <= MS_WIRE_MAX_SIGNATURE_BYTES &&
           (b->signature || b->signature_bytes == 0);
}

//  --------------------------------------------------------------------------
//  True when a SHUFFLE (or SHUFFLE_REPLY, with_origin false) obeys its
//  contract.

static bool
s_shuffle_valid(const ms_wire_shuffle_t *s, bool with_origin)
{
    if (with_origin && !s_fixed_endpoint_ok(s->endpoint))
        return false;
    if (s->n_peers > MS_WIRE_MAX_SHUFFLE_PEERS || (s->n_peers && !s->peers))
        return false;
    for (size_t i = 0; i < s->n_peers; i++)
        if (!s_fixed_endpoint_ok(s->peers[i].endpoint))
            return false;
    return true;
}

//  --------------------------------------------------------------------------
//  True when an ITEMS body obeys its contract.

static bool
s_items_valid(const ms_wire_items_t *it)
{
    if (it->n_items < 1 || it->n_items > MS_WIRE_MAX_ITEMS || !it->items)
        return false;
    for (size_t i = 0; i < it->n_items; i++)
        if (it->items[i].n_bytes < 1 ||
            it->items[i].n_bytes > MS_WIRE_MAX_ITEM_BYTES ||
            !it->items[i].bytes)
            return false;
    return true;
}

//  --------------------------------------------------------------------------
//  True when an envelope obeys every rule of its body.

static bool
s_envelope_valid(const ms_wire_envelope_t *env)
{
    if (env->protocol < 1)
        return false;
    switch (env->body) {
    case MS_WIRE_BODY_HELLO:
        return s_hello_valid(&env->hello);
    case MS_WIRE_BODY_HEARTBEAT:
        return s_heartbeat_valid(&env->heartbeat);
    case MS_WIRE_BODY_VECTOR_DIGEST:
    case MS_WIRE_BODY_BLOB_MISSING:
    case MS_WIRE_BODY_DISCONNECT:
    case MS_WIRE_BODY_WHO_ARE_YOU:
    case MS_WIRE_BODY_I_AM:
        return true;
    case MS_WIRE_BODY_VECTOR:
        return s_vector_valid(&env->vector);
    case MS_WIRE_BODY_RANGE_REQUEST: {
        const ms_wire_range_request_t *r = &env->range_request;
        return r->from_seq >= 1 && r->from_seq <= r->to_seq &&
               r->max_records >= 1;
    }
    case MS_WIRE_BODY_BLOCK_ACK:
        return env->block_ack.seq >= 1;
    case MS_WIRE_BODY_ITEM_DIGEST:
        return true;
    case MS_WIRE_BODY_ITEM_LIST:
        return env->item_list.n_digests <= MS_WIRE_MAX_ITEM_DIGESTS &&
               (env->item_list.digests || env->item_list.n_digests == 0);
    case MS_WIRE_BODY_ITEMS:
        return s_items_valid(&env->items);
    case MS_WIRE_BODY_BLOCK:
        return s_block_valid(&env->block);
    case MS_WIRE_BODY_BLOB_REQUEST: {
        const ms_wire_blob_request_t *r = &env->blob_request;
        return r->length >= 1 && r->length <= MS_WIRE_BLOB_CHUNK_MAX_BYTES &&
               r->offset <= UINT64_MAX - r->length;
    }
    case MS_WIRE_BODY_BLOB_CHUNK: {
        const ms_wire_blob_chunk_t *c = &env->blob_chunk;
        return c->data_bytes <= MS_WIRE_BLOB_CHUNK_MAX_BYTES &&
               (c->data || c->data_bytes == 0) && c->offset <= c->total &&
               c->data_bytes <= c->total - c->offset;
    }
    case MS_WIRE_BODY_JOIN:
        return s_fixed_endpoint_ok(env->join.endpoint);
    case MS_WIRE_BODY_FORWARD_JOIN:
        return s_fixed_endpoint_ok(env->forward_join.endpoint);
    case MS_WIRE_BODY_NEIGHBOR:
        return s_fixed_endpoint_ok(env->neighbor.endpoint);
    case MS_WIRE_BODY_SHUFFLE:
        return s_shuffle_valid(&env->shuffle, true);
    case MS_WIRE_BODY_SHUFFLE_REPLY:
        return s_shuffle_valid(&env->shuffle, false);
    case MS_WIRE_BODY_NONE:
    default:
        return false;
    }
}

// ===========================================================================
// Envelope: C -> protobuf-c (borrowing) and packing
// ===========================================================================

//  Every protobuf-c message an envelope may need, on the encoder's stack,
//  plus the arrays of its one repeated field.
typedef struct {
    Mswire__Envelope env;
    union {
        Mswire__Hello hello;
        Mswire__Heartbeat heartbeat;
        Mswire__VectorDigest vector_digest;
        Mswire__Vector vector;
        Mswire__RangeRequest range_request;
        Mswire__Block block;
        Mswire__BlobRequest blob_request;
        Mswire__BlobChunk blob_chunk;
        Mswire__BlobMissing blob_missing;
        Mswire__Join join;
        Mswire__ForwardJoin forward_join;
        Mswire__Neighbor neighbor;
        Mswire__Disconnect disconnect;
        Mswire__Shuffle shuffle;
        Mswire__ShuffleReply shuffle_reply;
        Mswire__WhoAreYou who_are_you;
        Mswire__IAm i_am;
        Mswire__BlockAck block_ack;
        Mswire__ItemDigest item_digest;
        Mswire__ItemList item_list;
        Mswire__Items items;
    } body;
    void *items; // repeated field items (malloc'd)
    void **ptrs; // pointers to them (malloc'd)
} s_pb_env_t;

//  --------------------------------------------------------------------------
//  Fill pb->items/ptrs with n Peer messages borrowing peers.

static int
s_pb_peers(s_pb_env_t *pb, const ms_wire_peer_t *peers, size_t n)
{
    int rc = s_repeated_new(n, sizeof(Mswire__Peer), &pb->items, &pb->ptrs);
    if (rc != MS_OK)
        return rc;
    Mswire__Peer *items = pb->items;
    for (size_t i = 0; i < n; i++) {
        mswire__peer__init(&items[i]);
        items[i].node_id = s_bin(peers[i].node_id, MS_WIRE_ID_BYTES);
        items[i].endpoint = s_str(peers[i].endpoint);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Build the protobuf-c form of a valid envelope in pb (borrowing env).

static int
s_pb_from_envelope(s_pb_env_t *pb, const ms_wire_envelope_t *env)
{
    memset(pb, 0, sizeof *pb);
    mswire__envelope__init(&pb->env);
    pb->env.protocol = env->protocol;
    int rc = MS_OK;
    switch (env->body) {
    case MS_WIRE_BODY_HELLO: {
        const ms_wire_hello_t *h = &env->hello;
        Mswire__Hello *m = &pb->body.hello;
        mswire__hello__init(m);
        m->node_id = s_bin(h->node_id, MS_WIRE_ID_BYTES);
        m->pool_id = s_bin(h->pool_id, MS_WIRE_ID_BYTES);
        m->protocol_min = h->protocol_min;
        m->protocol_max = h->protocol_max;
        m->incarnation = h->incarnation;
        m->mesh_port = h->mesh_port;
        m->n_workers = h->n_workers;
        m->operator_ = s_str(h->operator_name);
        m->certificate = s_bin(h->certificate, h->certificate_bytes);
        m->endpoint = s_str(h->endpoint);
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_HELLO;
        pb->env.hello = m;
        break;
    }
    case MS_WIRE_BODY_HEARTBEAT: {
        const ms_wire_heartbeat_t *h = &env->heartbeat;
        Mswire__Heartbeat *m = &pb->body.heartbeat;
        mswire__heartbeat__init(m);
        m->incarnation = h->incarnation;
        m->seq = h->seq;
        m->n_workers = h->n_workers;
        m->n_busy = h->n_busy;
        m->load = h->load;
        rc = s_repeated_new(h->n_live_claims, sizeof(Mswire__LiveClaim),
                            &pb->items, &pb->ptrs);
        if (rc != MS_OK)
            return rc;
        Mswire__LiveClaim *items = pb->items;
        for (size_t i = 0; i < h->n_live_claims; i++) {
            mswire__live_claim__init(&items[i]);
            items[i].task_id =
                s_bin(h->live_claims[i].task_id, MS_WIRE_ID_BYTES);
            items[i].slot = h->live_claims[i].slot;
            items[i].epoch = h->live_claims[i].epoch;
        }
        m->n_live_claims = h->n_live_claims;
        m->live_claims = (Mswire__LiveClaim **) pb->ptrs;
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_HEARTBEAT;
        pb->env.heartbeat = m;
        break;
    }
    case MS_WIRE_BODY_VECTOR_DIGEST: {
        Mswire__VectorDigest *m = &pb->body.vector_digest;
        mswire__vector_digest__init(m);
        m->digest = s_bin(env->vector_digest.digest, MS_WIRE_ID_BYTES);
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_VECTOR_DIGEST;
        pb->env.vector_digest = m;
        break;
    }
    case MS_WIRE_BODY_VECTOR: {
        const ms_wire_vector_t *v = &env->vector;
        Mswire__Vector *m = &pb->body.vector;
        mswire__vector__init(m);
        rc = s_repeated_new(v->n_entries, sizeof(Mswire__VectorEntry),
                            &pb->items, &pb->ptrs);
        if (rc != MS_OK)
            return rc;
        Mswire__VectorEntry *items = pb->items;
        for (size_t i = 0; i < v->n_entries; i++) {
            mswire__vector_entry__init(&items[i]);
            items[i].origin = s_bin(v->entries[i].origin, MS_WIRE_ID_BYTES);
            items[i].incarnation = v->entries[i].incarnation;
            items[i].seq = v->entries[i].seq;
        }
        m->n_entries = v->n_entries;
        m->entries = (Mswire__VectorEntry **) pb->ptrs;
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_VECTOR;
        pb->env.vector = m;
        break;
    }
    case MS_WIRE_BODY_RANGE_REQUEST: {
        const ms_wire_range_request_t *r = &env->range_request;
        Mswire__RangeRequest *m = &pb->body.range_request;
        mswire__range_request__init(m);
        m->origin = s_bin(r->origin, MS_WIRE_ID_BYTES);
        m->incarnation = r->incarnation;
        m->from_seq = r->from_seq;
        m->to_seq = r->to_seq;
        m->max_records = r->max_records;
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_RANGE_REQUEST;
        pb->env.range_request = m;
        break;
    }
    case MS_WIRE_BODY_BLOCK: {
        const ms_wire_block_t *b = &env->block;
        Mswire__Block *m = &pb->body.block;
        mswire__block__init(m);
        m->origin = s_bin(b->origin, MS_WIRE_ID_BYTES);
        m->incarnation = b->incarnation;
        m->first_seq = b->first_seq;
        m->signature = s_bin(b->signature, b->signature_bytes);
        rc = s_repeated_new(b->n_records, sizeof(Mswire__Record), &pb->items,
                            &pb->ptrs);
        if (rc != MS_OK)
            return rc;
        Mswire__Record *items = pb->items;
        for (size_t i = 0; i < b->n_records; i++) {
            mswire__record__init(&items[i]);
            items[i].seq = b->records[i].seq;
            items[i].kind = b->records[i].kind;
            items[i].payload =
                s_bin(b->records[i].payload, b->records[i].payload_bytes);
        }
        m->n_records = b->n_records;
        m->records = (Mswire__Record **) pb->ptrs;
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_BLOCK;
        pb->env.block = m;
        break;
    }
    case MS_WIRE_BODY_BLOB_REQUEST: {
        const ms_wire_blob_request_t *r = &env->blob_request;
        Mswire__BlobRequest *m = &pb->body.blob_request;
        mswire__blob_request__init(m);
        m->hash = s_bin(r->hash, MS_WIRE_ID_BYTES);
        m->offset = r->offset;
        m->length = r->length;
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_BLOB_REQUEST;
        pb->env.blob_request = m;
        break;
    }
    case MS_WIRE_BODY_BLOB_CHUNK: {
        const ms_wire_blob_chunk_t *c = &env->blob_chunk;
        Mswire__BlobChunk *m = &pb->body.blob_chunk;
        mswire__blob_chunk__init(m);
        m->hash = s_bin(c->hash, MS_WIRE_ID_BYTES);
        m->offset = c->offset;
        m->total = c->total;
        m->data = s_bin(c->data, c->data_bytes);
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_BLOB_CHUNK;
        pb->env.blob_chunk = m;
        break;
    }
    case MS_WIRE_BODY_BLOB_MISSING: {
        Mswire__BlobMissing *m = &pb->body.blob_missing;
        mswire__blob_missing__init(m);
        m->hash = s_bin(env->blob_missing.hash, MS_WIRE_ID_BYTES);
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_BLOB_MISSING;
        pb->env.blob_missing = m;
        break;
    }
    case MS_WIRE_BODY_JOIN: {
        Mswire__Join *m = &pb->body.join;
        mswire__join__init(m);
        m->node_id = s_bin(env->join.node_id, MS_WIRE_ID_BYTES);
        m->endpoint = s_str(env->join.endpoint);
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_JOIN;
        pb->env.join = m;
        break;
    }
    case MS_WIRE_BODY_FORWARD_JOIN: {
        const ms_wire_forward_join_t *f = &env->forward_join;
        Mswire__ForwardJoin *m = &pb->body.forward_join;
        mswire__forward_join__init(m);
        m->node_id = s_bin(f->node_id, MS_WIRE_ID_BYTES);
        m->endpoint = s_str(f->endpoint);
        m->ttl = f->ttl;
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_FORWARD_JOIN;
        pb->env.forward_join = m;
        break;
    }
    case MS_WIRE_BODY_NEIGHBOR: {
        const ms_wire_neighbor_t *nb = &env->neighbor;
        Mswire__Neighbor *m = &pb->body.neighbor;
        mswire__neighbor__init(m);
        m->node_id = s_bin(nb->node_id, MS_WIRE_ID_BYTES);
        m->endpoint = s_str(nb->endpoint);
        m->high_priority = nb->high_priority;
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_NEIGHBOR;
        pb->env.neighbor = m;
        break;
    }
    case MS_WIRE_BODY_DISCONNECT: {
        Mswire__Disconnect *m = &pb->body.disconnect;
        mswire__disconnect__init(m);
        m->node_id = s_bin(env->join.node_id, MS_WIRE_ID_BYTES);
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_DISCONNECT;
        pb->env.disconnect = m;
        break;
    }
    case MS_WIRE_BODY_SHUFFLE: {
        const ms_wire_shuffle_t *s = &env->shuffle;
        Mswire__Shuffle *m = &pb->body.shuffle;
        mswire__shuffle__init(m);
        m->node_id = s_bin(s->node_id, MS_WIRE_ID_BYTES);
        m->endpoint = s_str(s->endpoint);
        m->ttl = s->ttl;
        rc = s_pb_peers(pb, s->peers, s->n_peers);
        if (rc != MS_OK)
            return rc;
        m->n_peers = s->n_peers;
        m->peers = (Mswire__Peer **) pb->ptrs;
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_SHUFFLE;
        pb->env.shuffle = m;
        break;
    }
    case MS_WIRE_BODY_SHUFFLE_REPLY: {
        const ms_wire_shuffle_t *s = &env->shuffle;
        Mswire__ShuffleReply *m = &pb->body.shuffle_reply;
        mswire__shuffle_reply__init(m);
        rc = s_pb_peers(pb, s->peers, s->n_peers);
        if (rc != MS_OK)
            return rc;
        m->n_peers = s->n_peers;
        m->peers = (Mswire__Peer **) pb->ptrs;
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_SHUFFLE_REPLY;
        pb->env.shuffle_reply = m;
        break;
    }
    case MS_WIRE_BODY_WHO_ARE_YOU: {
        Mswire__WhoAreYou *m = &pb->body.who_are_you;
        mswire__who_are_you__init(m);
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_WHO_ARE_YOU;
        pb->env.who_are_you = m;
        break;
    }
    case MS_WIRE_BODY_I_AM: {
        Mswire__IAm *m = &pb->body.i_am;
        mswire__iam__init(m);
        m->node_id = s_bin(env->i_am.node_id, MS_WIRE_ID_BYTES);
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_I_AM;
        pb->env.i_am = m;
        break;
    }
    case MS_WIRE_BODY_BLOCK_ACK: {
        Mswire__BlockAck *m = &pb->body.block_ack;
        mswire__block_ack__init(m);
        m->incarnation = env->block_ack.incarnation;
        m->seq = env->block_ack.seq;
        m->own_incarnation = env->block_ack.own_incarnation;
        m->own_seq = env->block_ack.own_seq;
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_BLOCK_ACK;
        pb->env.block_ack = m;
        break;
    }
    case MS_WIRE_BODY_ITEM_DIGEST: {
        Mswire__ItemDigest *m = &pb->body.item_digest;
        mswire__item_digest__init(m);
        m->digest = s_bin(env->item_digest.digest, MS_WIRE_ID_BYTES);
        m->n_items = env->item_digest.n_items;
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_ITEM_DIGEST;
        pb->env.item_digest = m;
        break;
    }
    case MS_WIRE_BODY_ITEM_LIST: {
        const ms_wire_item_list_t *l = &env->item_list;
        Mswire__ItemList *m = &pb->body.item_list;
        mswire__item_list__init(m);
        if (l->n_digests) {
            ProtobufCBinaryData *bins = calloc(l->n_digests, sizeof *bins);
            if (!bins)
                return MS_ERR_NOMEM;
            for (size_t i = 0; i < l->n_digests; i++)
                bins[i] = s_bin(l->digests[i], MS_WIRE_ID_BYTES);
            pb->items = bins;
            m->digests = bins;
        }
        m->n_digests = l->n_digests;
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_ITEM_LIST;
        pb->env.item_list = m;
        break;
    }
    case MS_WIRE_BODY_ITEMS: {
        const ms_wire_items_t *it = &env->items;
        Mswire__Items *m = &pb->body.items;
        mswire__items__init(m);
        ProtobufCBinaryData *bins = calloc(it->n_items, sizeof *bins);
        if (!bins)
            return MS_ERR_NOMEM;
        for (size_t i = 0; i < it->n_items; i++)
            bins[i] = s_bin(it->items[i].bytes, it->items[i].n_bytes);
        pb->items = bins;
        m->items = bins;
        m->n_items = it->n_items;
        pb->env.body_case = MSWIRE__ENVELOPE__BODY_ITEMS;
        pb->env.items = m;
        break;
    }
    case MS_WIRE_BODY_NONE:
    default:
        return MS_ERR_INVALID; // s_envelope_valid refused it already
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Encode an envelope into a fresh buffer.

int
ms_wire_encode_envelope(const ms_wire_envelope_t *env, uint8_t **out, size_t *n)
{
    assert(env);
    assert(out);
    assert(n);
    *out = NULL;
    *n = 0;
    if (!s_envelope_valid(env))
        return MS_ERR_INVALID;
    s_pb_env_t pb;
    int rc = s_pb_from_envelope(&pb, env);
    if (rc == MS_OK)
        rc = s_pack(&pb.env.base, MS_MAX_FRAME_BYTES, out, n);
    free(pb.items);
    free(pb.ptrs);
    return rc;
}

// ===========================================================================
// Envelope: protobuf-c -> C (copying) and decoding
// ===========================================================================

//  --------------------------------------------------------------------------
//  Copy a Peer list into env->shuffle.

static int
s_peers_in(ms_wire_shuffle_t *s, Mswire__Peer *const *peers, size_t n)
{
    if (n > MS_WIRE_MAX_SHUFFLE_PEERS)
        return MS_ERR_PROTOCOL;
    if (n == 0)
        return MS_OK;
    s->peers = calloc(n, sizeof *s->peers);
    if (!s->peers)
        return MS_ERR_NOMEM;
    s->n_peers = n;
    for (size_t i = 0; i < n; i++) {
        if (!s_id_in(s->peers[i].node_id, &peers[i]->node_id) ||
            !s_fixed_in(s->peers[i].endpoint, MS_WIRE_ENDPOINT_MAX + 1,
                        peers[i]->endpoint))
            return MS_ERR_PROTOCOL;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Copy a HELLO out of its protobuf-c form.

static int
s_hello_in(ms_wire_hello_t *h, const Mswire__Hello *m)
{
    if (!s_id_in(h->node_id, &m->node_id) ||
        !s_id_in(h->pool_id, &m->pool_id) || m->mesh_port > 65535)
        return MS_ERR_PROTOCOL;
    h->protocol_min = m->protocol_min;
    h->protocol_max = m->protocol_max;
    h->incarnation = m->incarnation;
    h->mesh_port = (uint16_t) m->mesh_port;
    h->n_workers = m->n_workers;
    if (!s_fixed_in(h->endpoint, sizeof h->endpoint, m->endpoint) ||
        (h->endpoint[0] && !ms_wire_endpoint_valid(h->endpoint)))
        return MS_ERR_PROTOCOL;
    int rc = s_text_in(m->operator_, MS_WIRE_NAME_MAX, &h->operator_name);
    if (rc != MS_OK)
        return rc;
    return s_bytes_in(&m->certificate, MS_WIRE_MAX_CERTIFICATE_BYTES,
                      &h->certificate, &h->certificate_bytes);
}

//  --------------------------------------------------------------------------
//  Copy a HEARTBEAT out of its protobuf-c form.

static int
s_heartbeat_in(ms_wire_heartbeat_t *h, const Mswire__Heartbeat *m)
{
    h->incarnation = m->incarnation;
    h->seq = m->seq;
    h->n_workers = m->n_workers;
    h->n_busy = m->n_busy;
    h->load = m->load;
    if (m->n_live_claims == 0)
        return MS_OK;
    h->live_claims = calloc(m->n_live_claims, sizeof *h->live_claims);
    if (!h->live_claims)
        return MS_ERR_NOMEM;
    h->n_live_claims = m->n_live_claims;
    for (size_t i = 0; i < m->n_live_claims; i++) {
        const Mswire__LiveClaim *c = m->live_claims[i];
        if (!s_id_in(h->live_claims[i].task_id, &c->task_id))
            return MS_ERR_PROTOCOL;
        h->live_claims[i].slot = c->slot;
        h->live_claims[i].epoch = c->epoch;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Copy a VECTOR out of its protobuf-c form.

static int
s_vector_in(ms_wire_vector_t *v, const Mswire__Vector *m)
{
    if (m->n_entries == 0)
        return MS_OK;
    v->entries = calloc(m->n_entries, sizeof *v->entries);
    if (!v->entries)
        return MS_ERR_NOMEM;
    v->n_entries = m->n_entries;
    for (size_t i = 0; i < m->n_entries; i++) {
        const Mswire__VectorEntry *e = m->entries[i];
        if (!s_id_in(v->entries[i].origin, &e->origin))
            return MS_ERR_PROTOCOL;
        v->entries[i].incarnation = e->incarnation;
        v->entries[i].seq = e->seq;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Copy a BLOCK out of its protobuf-c form (record count checked before
//  anything is allocated).

static int
s_block_in(ms_wire_block_t *b, const Mswire__Block *m)
{
    if (!s_id_in(b->origin, &m->origin) || m->n_records < 1 ||
        m->n_records > MS_WIRE_BLOCK_MAX_RECORDS)
        return MS_ERR_PROTOCOL;
    b->incarnation = m->incarnation;
    b->first_seq = m->first_seq;
    b->records = calloc(m->n_records, sizeof *b->records);
    if (!b->records)
        return MS_ERR_NOMEM;
    b->n_records = m->n_records;
    for (size_t i = 0; i < m->n_records; i++) {
        const Mswire__Record *r = m->records[i];
        b->records[i].seq = r->seq;
        b->records[i].kind = r->kind;
        int rc =
            s_bytes_in(&r->payload, MS_WIRE_MAX_PAYLOAD_BYTES,
                       &b->records[i].payload, &b->records[i].payload_bytes);
        if (rc != MS_OK)
            return rc;
    }
    return s_bytes_in(&m->signature, MS_WIRE_MAX_SIGNATURE_BYTES, &b->signature,
                      &b->signature_bytes);
}

//  --------------------------------------------------------------------------
//  Copy an ITEM_LIST out of its protobuf-c form (count checked first).

static int
s_item_list_in(ms_wire_item_list_t *l, const Mswire__ItemList *m)
{
    if (m->n_digests > MS_WIRE_MAX_ITEM_DIGESTS)
        return MS_ERR_PROTOCOL;
    if (m->n_digests == 0)
        return MS_OK;
    l->digests = calloc(m->n_digests, sizeof *l->digests);
    if (!l->digests)
        return MS_ERR_NOMEM;
    l->n_digests = m->n_digests;
    for (size_t i = 0; i < m->n_digests; i++)
        if (!s_id_in(l->digests[i], &m->digests[i]))
            return MS_ERR_PROTOCOL;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Copy ITEMS out of its protobuf-c form (count checked first).

static int
s_items_in(ms_wire_items_t *it, const Mswire__Items *m)
{
    if (m->n_items < 1 || m->n_items > MS_WIRE_MAX_ITEMS)
        return MS_ERR_PROTOCOL;
    it->items = calloc(m->n_items, sizeof *it->items);
    if (!it->items)
        return MS_ERR_NOMEM;
    it->n_items = m->n_items;
    for (size_t i = 0; i < m->n_items; i++) {
        if (m->items[i].len < 1)
            return MS_ERR_PROTOCOL;
        int rc = s_bytes_in(&m->items[i], MS_WIRE_MAX_ITEM_BYTES,
                            &it->items[i].bytes, &it->items[i].n_bytes);
        if (rc != MS_OK)
            return rc;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Copy the body of an unpacked envelope into env (env->body is set
//  first, so a partial copy can be destroyed).

static int
s_envelope_in(ms_wire_envelope_t *env, const Mswire__Envelope *m)
{
    env->protocol = m->protocol;
    switch (m->body_case) {
    case MSWIRE__ENVELOPE__BODY_HELLO:
        env->body = MS_WIRE_BODY_HELLO;
        return s_hello_in(&env->hello, m->hello);
    case MSWIRE__ENVELOPE__BODY_HEARTBEAT:
        env->body = MS_WIRE_BODY_HEARTBEAT;
        return s_heartbeat_in(&env->heartbeat, m->heartbeat);
    case MSWIRE__ENVELOPE__BODY_VECTOR_DIGEST:
        env->body = MS_WIRE_BODY_VECTOR_DIGEST;
        return s_id_in(env->vector_digest.digest, &m->vector_digest->digest)
                   ? MS_OK
                   : MS_ERR_PROTOCOL;
    case MSWIRE__ENVELOPE__BODY_VECTOR:
        env->body = MS_WIRE_BODY_VECTOR;
        return s_vector_in(&env->vector, m->vector);
    case MSWIRE__ENVELOPE__BODY_RANGE_REQUEST: {
        const Mswire__RangeRequest *r = m->range_request;
        env->body = MS_WIRE_BODY_RANGE_REQUEST;
        env->range_request.incarnation = r->incarnation;
        env->range_request.from_seq = r->from_seq;
        env->range_request.to_seq = r->to_seq;
        env->range_request.max_records = r->max_records;
        return s_id_in(env->range_request.origin, &r->origin) ? MS_OK
                                                              : MS_ERR_PROTOCOL;
    }
    case MSWIRE__ENVELOPE__BODY_BLOCK:
        env->body = MS_WIRE_BODY_BLOCK;
        return s_block_in(&env->block, m->block);
    case MSWIRE__ENVELOPE__BODY_BLOB_REQUEST: {
        const Mswire__BlobRequest *r = m->blob_request;
        env->body = MS_WIRE_BODY_BLOB_REQUEST;
        env->blob_request.offset = r->offset;
        env->blob_request.length = r->length;
        return s_id_in(env->blob_request.hash, &r->hash) ? MS_OK
                                                         : MS_ERR_PROTOCOL;
    }
    case MSWIRE__ENVELOPE__BODY_BLOB_CHUNK: {
        const Mswire__BlobChunk *c = m->blob_chunk;
        env->body = MS_WIRE_BODY_BLOB_CHUNK;
        env->blob_chunk.offset = c->offset;
        env->blob_chunk.total = c->total;
        if (!s_id_in(env->blob_chunk.hash, &c->hash))
            return MS_ERR_PROTOCOL;
        return s_bytes_in(&c->data, MS_WIRE_BLOB_CHUNK_MAX_BYTES,
                          &env->blob_chunk.data, &env->blob_chunk.data_bytes);
    }
    case MSWIRE__ENVELOPE__BODY_BLOB_MISSING:
        env->body = MS_WIRE_BODY_BLOB_MISSING;
        return s_id_in(env->blob_missing.hash, &m->blob_missing->hash)
                   ? MS_OK
                   : MS_ERR_PROTOCOL;
    case MSWIRE__ENVELOPE__BODY_JOIN:
        env->body = MS_WIRE_BODY_JOIN;
        return s_id_in(env->join.node_id, &m->join->node_id) &&
                       s_fixed_in(env->join.endpoint, sizeof env->join.endpoint,
                                  m->join->endpoint)
                   ? MS_OK
                   : MS_ERR_PROTOCOL;
    case MSWIRE__ENVELOPE__BODY_FORWARD_JOIN: {
        const Mswire__ForwardJoin *f = m->forward_join;
        env->body = MS_WIRE_BODY_FORWARD_JOIN;
        env->forward_join.ttl = f->ttl;
        return s_id_in(env->forward_join.node_id, &f->node_id) &&
                       s_fixed_in(env->forward_join.endpoint,
                                  sizeof env->forward_join.endpoint,
                                  f->endpoint)
                   ? MS_OK
                   : MS_ERR_PROTOCOL;
    }
    case MSWIRE__ENVELOPE__BODY_NEIGHBOR: {
        const Mswire__Neighbor *nb = m->neighbor;
        env->body = MS_WIRE_BODY_NEIGHBOR;
        env->neighbor.high_priority = nb->high_priority;
        return s_id_in(env->neighbor.node_id, &nb->node_id) &&
                       s_fixed_in(env->neighbor.endpoint,
                                  sizeof env->neighbor.endpoint, nb->endpoint)
                   ? MS_OK
                   : MS_ERR_PROTOCOL;
    }
    case MSWIRE__ENVELOPE__BODY_DISCONNECT:
        env->body = MS_WIRE_BODY_DISCONNECT;
        return s_id_in(env->join.node_id, &m->disconnect->node_id)
                   ? MS_OK
                   : MS_ERR_PROTOCOL;
    case MSWIRE__ENVELOPE__BODY_SHUFFLE: {
        const Mswire__Shuffle *s = m->shuffle;
        env->body = MS_WIRE_BODY_SHUFFLE;
        env->shuffle.ttl = s->ttl;
        if (!s_id_in(env->shuffle.node_id, &s->node_id) ||
            !s_fixed_in(env->shuffle.endpoint, sizeof env->shuffle.endpoint,
                        s->endpoint))
            return MS_ERR_PROTOCOL;
        return s_peers_in(&env->shuffle, s->peers, s->n_peers);
    }
    case MSWIRE__ENVELOPE__BODY_SHUFFLE_REPLY:
        env->body = MS_WIRE_BODY_SHUFFLE_REPLY;
        return s_peers_in(&env->shuffle, m->shuffle_reply->peers,
                          m->shuffle_reply->n_peers);
    case MSWIRE__ENVELOPE__BODY_WHO_ARE_YOU:
        env->body = MS_WIRE_BODY_WHO_ARE_YOU;
        return MS_OK;
    case MSWIRE__ENVELOPE__BODY_I_AM:
        env->body = MS_WIRE_BODY_I_AM;
        return s_id_in(env->i_am.node_id, &m->i_am->node_id) ? MS_OK
                                                             : MS_ERR_PROTOCOL;
    case MSWIRE__ENVELOPE__BODY_BLOCK_ACK:
        env->body = MS_WIRE_BODY_BLOCK_ACK;
        env->block_ack.incarnation = m->block_ack->incarnation;
        env->block_ack.seq = m->block_ack->seq;
        env->block_ack.own_incarnation = m->block_ack->own_incarnation;
        env->block_ack.own_seq = m->block_ack->own_seq;
        return MS_OK;
    case MSWIRE__ENVELOPE__BODY_ITEM_DIGEST:
        env->body = MS_WIRE_BODY_ITEM_DIGEST;
        env->item_digest.n_items = m->item_digest->n_items;
        return s_id_in(env->item_digest.digest, &m->item_digest->digest)
                   ? MS_OK
                   : MS_ERR_PROTOCOL;
    case MSWIRE__ENVELOPE__BODY_ITEM_LIST:
        env->body = MS_WIRE_BODY_ITEM_LIST;
        return s_item_list_in(&env->item_list, m->item_list);
    case MSWIRE__ENVELOPE__BODY_ITEMS:
        env->body = MS_WIRE_BODY_ITEMS;
        return s_items_in(&env->items, m->items);
    case MSWIRE__ENVELOPE__BODY__NOT_SET:
    default:
        return MS_ERR_PROTOCOL; // no body, or one newer than this build
    }
}

//  --------------------------------------------------------------------------
//  Decode one frame into a fresh envelope.

int
ms_wire_decode_envelope(const uint8_t *buf, size_t n, ms_wire_envelope_t **out)
{
    assert(out);
    *out = NULL;
    ProtobufCMessage *msg;
    int rc = s_unpack(&mswire__envelope__descriptor, buf, n, MS_MAX_FRAME_BYTES,
                      &msg);
    if (rc != MS_OK)
        return rc;
    ms_wire_envelope_t *env = calloc(1, sizeof *env);
    if (!env)
        rc = MS_ERR_NOMEM;
    else
        rc = s_envelope_in(env, (const Mswire__Envelope *) msg);
    protobuf_c_message_free_unpacked(msg, NULL);
    if (rc == MS_OK && !s_envelope_valid(env))
        rc = MS_ERR_PROTOCOL;
    if (rc != MS_OK) {
        ms_wire_envelope_destroy(&env);
        return rc;
    }
    *out = env;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free an envelope and its members.

void
ms_wire_envelope_destroy(ms_wire_envelope_t **self_p)
{
    assert(self_p);
    ms_wire_envelope_t *self = *self_p;
    if (!self)
        return;
    switch (self->body) {
    case MS_WIRE_BODY_HELLO:
        free(self->hello.operator_name);
        free(self->hello.certificate);
        break;
    case MS_WIRE_BODY_HEARTBEAT:
        free(self->heartbeat.live_claims);
        break;
    case MS_WIRE_BODY_VECTOR:
        free(self->vector.entries);
        break;
    case MS_WIRE_BODY_BLOCK:
        for (size_t i = 0; i < self->block.n_records; i++)
            free(self->block.records[i].payload);
        free(self->block.records);
        free(self->block.signature);
        break;
    case MS_WIRE_BODY_BLOB_CHUNK:
        free(self->blob_chunk.data);
        break;
    case MS_WIRE_BODY_SHUFFLE:
    case MS_WIRE_BODY_SHUFFLE_REPLY:
        free(self->shuffle.peers);
        break;
    case MS_WIRE_BODY_ITEM_LIST:
        free(self->item_list.digests);
        break;
    case MS_WIRE_BODY_ITEMS:
        for (size_t i = 0; i < self->items.n_items; i++)
            free(self->items.items[i].bytes);
        free(self->items.items);
        break;
    default:
        break;
    }
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Name of a body, for logs.

const char *
ms_wire_body_name(ms_wire_body_t body)
{
    switch (body) {
    case MS_WIRE_BODY_HELLO:
        return "HELLO";
    case MS_WIRE_BODY_HEARTBEAT:
        return "HEARTBEAT";
    case MS_WIRE_BODY_VECTOR_DIGEST:
        return "VECTOR_DIGEST";
    case MS_WIRE_BODY_VECTOR:
        return "VECTOR";
    case MS_WIRE_BODY_RANGE_REQUEST:
        return "RANGE_REQUEST";
    case MS_WIRE_BODY_BLOCK:
        return "BLOCK";
    case MS_WIRE_BODY_BLOB_REQUEST:
        return "BLOB_REQUEST";
    case MS_WIRE_BODY_BLOB_CHUNK:
        return "BLOB_CHUNK";
    case MS_WIRE_BODY_BLOB_MISSING:
        return "BLOB_MISSING";
    case MS_WIRE_BODY_JOIN:
        return "JOIN";
    case MS_WIRE_BODY_FORWARD_JOIN:
        return "FORWARD_JOIN";
    case MS_WIRE_BODY_NEIGHBOR:
        return "NEIGHBOR";
    case MS_WIRE_BODY_DISCONNECT:
        return "DISCONNECT";
    case MS_WIRE_BODY_SHUFFLE:
        return "SHUFFLE";
    case MS_WIRE_BODY_SHUFFLE_REPLY:
        return "SHUFFLE_REPLY";
    case MS_WIRE_BODY_WHO_ARE_YOU:
        return "WHO_ARE_YOU";
    case MS_WIRE_BODY_I_AM:
        return "I_AM";
    case MS_WIRE_BODY_BLOCK_ACK:
        return "BLOCK_ACK";
    case MS_WIRE_BODY_ITEM_DIGEST:
        return "ITEM_DIGEST";
    case MS_WIRE_BODY_ITEM_LIST:
        return "ITEM_LIST";
    case MS_WIRE_BODY_ITEMS:
        return "ITEMS";
    case MS_WIRE_BODY_NONE:
    default:
        return "?";
    }
}

// ===========================================================================
// Record payloads
// ===========================================================================

//  --------------------------------------------------------------------------
//  Pack a payload message: MS_ERR_RANGE over MS_WIRE_MAX_PAYLOAD_BYTES.

static int
s_pack_payload(const ProtobufCMessage *msg, uint8_t **out, size_t *n)
{
    return s_pack(msg, MS_WIRE_MAX_PAYLOAD_BYTES, out, n);
}

//  --------------------------------------------------------------------------
//  True when a claim epoch is in contract (epochs start at 1).

static bool
s_epoch_ok(uint32_t epoch)
{
    return epoch >= 1;
}

// --- SWEEP (kind 1) ---------------------------------------------------------

//  --------------------------------------------------------------------------
//  True when a sweep payload obeys its contract.

static bool
s_sweep_valid(const ms_wire_sweep_t *s, size_t max)
{
    if (!s_text_ok(s->spec, max, true) ||
        s->n_datasets > MS_WIRE_MAX_DATASET_FILES ||
        (s->n_datasets && !s->datasets))
        return false;
    for (size_t i = 0; i < s->n_datasets; i++) {
        const ms_wire_dataset_ref_t *d = &s->datasets[i];
        if (!s_fixed_text_ok(d->role, sizeof d->role, true) ||
            !s_fixed_text_ok(d->name, sizeof d->name, true))
            return false;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Encode a sweep payload of at most MAX bytes.

static int
s_encode_sweep(const ms_wire_sweep_t *sweep, size_t max, uint8_t **out,
               size_t *n)
{
    assert(sweep && out && n);
    *out = NULL;
    *n = 0;
    if (!s_sweep_valid(sweep, max))
        return MS_ERR_INVALID;
    Mswire__SweepPayload m = MSWIRE__SWEEP_PAYLOAD__INIT;
    m.sweep_id = s_bin(sweep->sweep_id, MS_WIRE_ID_BYTES);
    m.spec = s_str(sweep->spec);
    m.priority = sweep->priority;
    void *items, **ptrs;
    int rc = s_repeated_new(sweep->n_datasets, sizeof(Mswire__DatasetRef),
                            &items, &ptrs);
    if (rc != MS_OK)
        return rc;
    Mswire__DatasetRef *refs = items;
    for (size_t i = 0; i < sweep->n_datasets; i++) {
        mswire__dataset_ref__init(&refs[i]);
        refs[i].role = s_str(sweep->datasets[i].role);
        refs[i].name = s_str(sweep->datasets[i].name);
        refs[i].size = sweep->datasets[i].size;
        refs[i].hash = s_bin(sweep->datasets[i].hash, MS_WIRE_ID_BYTES);
    }
    m.n_datasets = sweep->n_datasets;
    m.datasets = (Mswire__DatasetRef **) ptrs;
    rc = s_pack(&m.base, max, out, n);
    free(items);
    free(ptrs);
    return rc;
}

//  --------------------------------------------------------------------------
//  Encode a sweep payload (one record's worth).

int
ms_wire_encode_sweep(const ms_wire_sweep_t *sweep, uint8_t **out, size_t *n)
{
    return s_encode_sweep(sweep, MS_WIRE_MAX_PAYLOAD_BYTES, out, n);
}

//  --------------------------------------------------------------------------
//  Encode a sweep payload the store carries in FRAGMENT records.

int
ms_wire_encode_sweep_big(const ms_wire_sweep_t *sweep, uint8_t **out, size_t *n)
{
    return s_encode_sweep(sweep, MS_WIRE_MAX_LOGICAL_PAYLOAD_BYTES, out, n);
}

//  --------------------------------------------------------------------------
//  Copy a sweep payload out of its protobuf-c form.

static int
s_sweep_in(ms_wire_sweep_t *s, const Mswire__SweepPayload *m, size_t max)
{
    if (!s_id_in(s->sweep_id, &m->sweep_id) ||
        m->n_datasets > MS_WIRE_MAX_DATASET_FILES)
        return MS_ERR_PROTOCOL;
    s->priority = m->priority;
    int rc = s_text_in(m->spec, max, &s->spec);
    if (rc != MS_OK || m->n_datasets == 0)
        return rc;
    s->datasets = calloc(m->n_datasets, sizeof *s->datasets);
    if (!s->datasets)
        return MS_ERR_NOMEM;
    s->n_datasets = m->n_datasets;
    for (size_t i = 0; i < m->n_datasets; i++) {
        const Mswire__DatasetRef *r = m->datasets[i];
        ms_wire_dataset_ref_t *d = &s->datasets[i];
        if (!s_fixed_in(d->role, sizeof d->role, r->role) ||
            !s_fixed_in(d->name, sizeof d->name, r->name) ||
            !s_id_in(d->hash, &r->hash))
            return MS_ERR_PROTOCOL;
        d->size = r->size;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Decode a sweep payload of at most MAX bytes.

static int
s_decode_sweep(const uint8_t *buf, size_t n, size_t max, ms_wire_sweep_t **out)
{
    assert(out);
    *out = NULL;
    ProtobufCMessage *msg;
    int rc = s_unpack(&mswire__sweep_payload__descriptor, buf, n, max, &msg);
    if (rc != MS_OK)
        return rc;
    ms_wire_sweep_t *s = calloc(1, sizeof *s);
    rc = s ? s_sweep_in(s, (const Mswire__SweepPayload *) msg, max)
           : MS_ERR_NOMEM;
    protobuf_c_message_free_unpacked(msg, NULL);
    if (rc == MS_OK && !s_sweep_valid(s, max))
        rc = MS_ERR_PROTOCOL;
    if (rc != MS_OK) {
        ms_wire_sweep_destroy(&s);
        return rc;
    }
    *out = s;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Decode a sweep payload (one record's worth).

int
ms_wire_decode_sweep(const uint8_t *buf, size_t n, ms_wire_sweep_t **out)
{
    return s_decode_sweep(buf, n, MS_WIRE_MAX_PAYLOAD_BYTES, out);
}

//  --------------------------------------------------------------------------
//  Decode a sweep payload reassembled from FRAGMENT records.

int
ms_wire_decode_sweep_big(const uint8_t *buf, size_t n, ms_wire_sweep_t **out)
{
    return s_decode_sweep(buf, n, MS_WIRE_MAX_LOGICAL_PAYLOAD_BYTES, out);
}

//  --------------------------------------------------------------------------
//  Free a decoded sweep payload.

void
ms_wire_sweep_destroy(ms_wire_sweep_t **self_p)
{
    assert(self_p);
    if (!*self_p)
        return;
    free((*self_p)->spec);
    free((*self_p)->datasets);
    free(*self_p);
    *self_p = NULL;
}

// --- SWEEP_CONTROL (kind 2) -------------------------------------------------

//  --------------------------------------------------------------------------
//  True when action is one this build knows.

static bool
s_action_ok(uint32_t action)
{
    return action >= MS_WIRE_SWEEP_ACTION_CANCEL &&
           action <= MS_WIRE_SWEEP_ACTION_REOPEN;
}

//  --------------------------------------------------------------------------
//  Encode a sweep-control payload.

int
ms_wire_encode_sweep_control(const ms_wire_sweep_control_t *control,
                             uint8_t **out, size_t *n)
{
    assert(control && out && n);
    *out = NULL;
    *n = 0;
    if (!s_action_ok((uint32_t) control->action))
        return MS_ERR_INVALID;
    Mswire__SweepControlPayload m = MSWIRE__SWEEP_CONTROL_PAYLOAD__INIT;
    m.sweep_id = s_bin(control->sweep_id, MS_WIRE_ID_BYTES);
    m.action = (uint32_t) control->action;
    m.priority = control->priority;
    m.lamport = control->lamport; // 0 is not written: old records' bytes
    return s_pack_payload(&m.base, out, n);
}

//  --------------------------------------------------------------------------
//  Decode a sweep-control payload.

int
ms_wire_decode_sweep_control(const uint8_t *buf, size_t n,
                             ms_wire_sweep_control_t **out)
{
    assert(out);
    *out = NULL;
    ProtobufCMessage *msg;
    int rc = s_unpack(&mswire__sweep_control_payload__descriptor, buf, n,
                      MS_WIRE_MAX_PAYLOAD_BYTES, &msg);
    if (rc != MS_OK)
        return rc;
    const Mswire__SweepControlPayload *m =
        (const Mswire__SweepControlPayload *) msg;
    ms_wire_sweep_control_t *c = NULL;
    if (!s_action_ok(m->action))
        rc = MS_ERR_PROTOCOL;
    else if (!(c = calloc(1, sizeof *c)))
        rc = MS_ERR_NOMEM;
    else if (!s_id_in(c->sweep_id, &m->sweep_id))
        rc = MS_ERR_PROTOCOL;
    else {
        c->action = (ms_wire_sweep_action_t) m->action;
        c->priority = m->priority;
        c->lamport = m->lamport;
    }
    protobuf_c_message_free_unpacked(msg, NULL);
    if (rc != MS_OK) {
        ms_wire_sweep_control_destroy(&c);
        return rc;
    }
    *out = c;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free a decoded sweep-control payload.

void
ms_wire_sweep_control_destroy(ms_wire_sweep_control_t **self_p)
{
    assert(self_p);
    free(*self_p);
    *self_p = NULL;
}

// --- DATASET (kind 3) -------------------------------------------------------

//  --------------------------------------------------------------------------
//  True when a dataset payload obeys its contract.

static bool
s_dataset_valid(const ms_wire_dataset_t *d)
{
    if (!s_fixed_text_ok(d->name, sizeof d->name, true) || d->n_files < 1 ||
        d->n_files > MS_WIRE_MAX_DATASET_FILES || !d->files)
        return false;
    for (size_t i = 0; i < d->n_files; i++)
        if (!s_fixed_text_ok(d->files[i].role, sizeof d->files[i].role, true))
            return false;
    return true;
}

//  --------------------------------------------------------------------------
//  Encode a dataset payload.

int
ms_wire_encode_dataset(const ms_wire_dataset_t *dataset, uint8_t **out,
                       size_t *n)
{
    assert(dataset && out && n);
    *out = NULL;
    *n = 0;
    if (!s_dataset_valid(dataset))
        return MS_ERR_INVALID;
    Mswire__DatasetPayload m = MSWIRE__DATASET_PAYLOAD__INIT;
    m.name = s_str(dataset->name);
    void *items, **ptrs;
    int rc = s_repeated_new(dataset->n_files, sizeof(Mswire__DatasetFile),
                            &items, &ptrs);
    if (rc != MS_OK)
        return rc;
    Mswire__DatasetFile *files = items;
    for (size_t i = 0; i < dataset->n_files; i++) {
        mswire__dataset_file__init(&files[i]);
        files[i].role = s_str(dataset->files[i].role);
        files[i].size = dataset->files[i].size;
        files[i].hash = s_bin(dataset->files[i].hash, MS_WIRE_ID_BYTES);
    }
    m.n_files = dataset->n_files;
    m.files = (Mswire__DatasetFile **) ptrs;
    if (dataset->has_hash)
        m.hash = s_bin(dataset->hash, MS_WIRE_ID_BYTES);
    rc = s_pack_payload(&m.base, out, n);
    free(items);
    free(ptrs);
    return rc;
}

//  --------------------------------------------------------------------------
//  Copy a dataset payload out of its protobuf-c form.

static int
s_dataset_in(ms_wire_dataset_t *d, const Mswire__DatasetPayload *m)
{
    if (!s_fixed_in(d->name, sizeof d->name, m->name) || m->n_files < 1 ||
        m->n_files > MS_WIRE_MAX_DATASET_FILES)
        return MS_ERR_PROTOCOL;
    if (m->hash.len > 0) {
        if (!s_id_in(d->hash, &m->hash))
            return MS_ERR_PROTOCOL;
        d->has_hash = true;
    }
    d->files = calloc(m->n_files, sizeof *d->files);
    if (!d->files)
        return MS_ERR_NOMEM;
    d->n_files = m->n_files;
    for (size_t i = 0; i < m->n_files; i++) {
        const Mswire__DatasetFile *f = m->files[i];
        if (!s_fixed_in(d->files[i].role, sizeof d->files[i].role, f->role) ||
            !s_id_in(d->files[i].hash, &f->hash))
            return MS_ERR_PROTOCOL;
        d->files[i].size = f->size;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Decode a dataset payload.

int
ms_wire_decode_dataset(const uint8_t *buf, size_t n, ms_wire_dataset_t **out)
{
    assert(out);
    *out = NULL;
    ProtobufCMessage *msg;
    int rc = s_unpack(&mswire__dataset_payload__descriptor, buf, n,
                      MS_WIRE_MAX_PAYLOAD_BYTES, &msg);
    if (rc != MS_OK)
        return rc;
    ms_wire_dataset_t *d = calloc(1, sizeof *d);
    rc = d ? s_dataset_in(d, (const Mswire__DatasetPayload *) msg)
           : MS_ERR_NOMEM;
    protobuf_c_message_free_unpacked(msg, NULL);
    if (rc == MS_OK && !s_dataset_valid(d))
        rc = MS_ERR_PROTOCOL;
    if (rc != MS_OK) {
        ms_wire_dataset_destroy(&d);
        return rc;
    }
    *out = d;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free a decoded dataset payload.

void
ms_wire_dataset_destroy(ms_wire_dataset_t **self_p)
{
    assert(self_p);
    if (!*self_p)
        return;
    free((*self_p)->files);
    free(*self_p);
    *self_p = NULL;
}

// --- CLAIM (kind 4) ---------------------------------------------------------

//  --------------------------------------------------------------------------
//  Encode a claim payload.

int
ms_wire_encode_claim(const ms_wire_claim_t *claim, uint8_t **out, size_t *n)
{
    assert(claim && out && n);
    *out = NULL;
    *n = 0;
    if (!s_epoch_ok(claim->epoch))
        return MS_ERR_INVALID;
    Mswire__ClaimPayload m = MSWIRE__CLAIM_PAYLOAD__INIT;
    m.task_id = s_bin(claim->task_id, MS_WIRE_ID_BYTES);
    m.slot = claim->slot;
    m.epoch = claim->epoch;
    return s_pack_payload(&m.base, out, n);
}

//  --------------------------------------------------------------------------
//  Decode a claim payload into a caller struct.

int
ms_wire_decode_claim(const uint8_t *buf, size_t n, ms_wire_claim_t *out)
{
    assert(out);
    ProtobufCMessage *msg;
    int rc = s_unpack(&mswire__claim_payload__descriptor, buf, n,
                      MS_WIRE_MAX_PAYLOAD_BYTES, &msg);
    if (rc != MS_OK)
        return rc;
    const Mswire__ClaimPayload *m = (const Mswire__ClaimPayload *) msg;
    ms_wire_claim_t claim;
    if (!s_id_in(claim.task_id, &m->task_id) || !s_epoch_ok(m->epoch))
        rc = MS_ERR_PROTOCOL;
    else {
        claim.slot = m->slot;
        claim.epoch = m->epoch;
        *out = claim;
    }
    protobuf_c_message_free_unpacked(msg, NULL);
    return rc;
}

// --- COMMIT (kind 6) --------------------------------------------------------

//  --------------------------------------------------------------------------
//  Encode a commit payload.

int
ms_wire_encode_commit(const ms_wire_commit_t *commit, uint8_t **out, size_t *n)
{
    assert(commit && out && n);
    *out = NULL;
    *n = 0;
    if (!s_epoch_ok(commit->epoch))
        return MS_ERR_INVALID;
    Mswire__CommitPayload m = MSWIRE__COMMIT_PAYLOAD__INIT;
    m.task_id = s_bin(commit->task_id, MS_WIRE_ID_BYTES);
    m.slot = commit->slot;
    m.epoch = commit->epoch;
    m.commitment = s_bin(commit->commitment, MS_WIRE_ID_BYTES);
    return s_pack_payload(&m.base, out, n);
}

//  --------------------------------------------------------------------------
//  Decode a commit payload into a caller struct.

int
ms_wire_decode_commit(const uint8_t *buf, size_t n, ms_wire_commit_t *out)
{
    assert(out);
    ProtobufCMessage *msg;
    int rc = s_unpack(&mswire__commit_payload__descriptor, buf, n,
                      MS_WIRE_MAX_PAYLOAD_BYTES, &msg);
    if (rc != MS_OK)
        return rc;
    const Mswire__CommitPayload *m = (const Mswire__CommitPayload *) msg;
    ms_wire_commit_t commit;
    if (!s_id_in(commit.task_id, &m->task_id) || !s_epoch_ok(m->epoch) ||
        !s_id_in(commit.commitment, &m->commitment))
        rc = MS_ERR_PROTOCOL;
    else {
        commit.slot = m->slot;
        commit.epoch = m->epoch;
        *out = commit;
    }
    protobuf_c_message_free_unpacked(msg, NULL);
    return rc;
}

// --- RELEASE (kind 5) -------------------------------------------------------

//  --------------------------------------------------------------------------
//  Encode a release payload.

int
ms_wire_encode_release(const ms_wire_release_t *release, uint8_t **out,
                       size_t *n)
{
    assert(release && out && n);
    *out = NULL;
    *n = 0;
    if (!s_epoch_ok(release->epoch) ||
        !s_text_ok(release->reason, MS_WIRE_REASON_MAX, false))
        return MS_ERR_INVALID;
    Mswire__ReleasePayload m = MSWIRE__RELEASE_PAYLOAD__INIT;
    m.task_id = s_bin(release->task_id, MS_WIRE_ID_BYTES);
    m.slot = release->slot;
    m.epoch = release->epoch;
    m.reason = s_str(release->reason);
    return s_pack_payload(&m.base, out, n);
}

//  --------------------------------------------------------------------------
//  Decode a release payload.

int
ms_wire_decode_release(const uint8_t *buf, size_t n, ms_wire_release_t **out)
{
    assert(out);
    *out = NULL;
    ProtobufCMessage *msg;
    int rc = s_unpack(&mswire__release_payload__descriptor, buf, n,
                      MS_WIRE_MAX_PAYLOAD_BYTES, &msg);
    if (rc != MS_OK)
        return rc;
    const Mswire__ReleasePayload *m = (const Mswire__ReleasePayload *) msg;
    ms_wire_release_t *r = calloc(1, sizeof *r);
    if (!r)
        rc = MS_ERR_NOMEM;
    else if (!s_id_in(r->task_id, &m->task_id) || !s_epoch_ok(m->epoch))
        rc = MS_ERR_PROTOCOL;
    else {
        r->slot = m->slot;
        r->epoch = m->epoch;
        rc = s_text_in(m->reason, MS_WIRE_REASON_MAX, &r->reason);
        if (rc == MS_OK && !s_text_ok(r->reason, MS_WIRE_REASON_MAX, false))
            rc = MS_ERR_PROTOCOL;
    }
    protobuf_c_message_free_unpacked(msg, NULL);
    if (rc != MS_OK) {
        ms_wire_release_destroy(&r);
        return rc;
    }
    *out = r;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free a decoded release payload.

void
ms_wire_release_destroy(ms_wire_release_t **self_p)
{
    assert(self_p);
    if (!*self_p)
        return;
    free((*self_p)->reason);
    free(*self_p);
    *self_p = NULL;
}

// --- RESULT (kind 7) --------------------------------------------------------

//  --------------------------------------------------------------------------
//  Encode a result payload of at most MAX bytes (a row too long for MAX:
//  MS_ERR_RANGE, so a caller can tell "too big" from "malformed").

static int
s_encode_result(const ms_wire_result_t *result, size_t max, uint8_t **out,
                size_t *n)
{
    assert(result && out && n);
    *out = NULL;
    *n = 0;
    if (!s_epoch_ok(result->epoch) || !result->row_json)
        return MS_ERR_INVALID;
    if (strnlen(result->row_json, max + 1) > max)
        return MS_ERR_RANGE;
    if (!s_text_ok(result->row_json, max, true))
        return MS_ERR_INVALID;
    Mswire__ResultPayload m = MSWIRE__RESULT_PAYLOAD__INIT;
    m.task_id = s_bin(result->task_id, MS_WIRE_ID_BYTES);
    m.slot = result->slot;
    m.epoch = result->epoch;
    m.row_json = s_str(result->row_json);
    if (result->has_nonce)
        m.nonce = s_bin(result->nonce, MS_WIRE_ID_BYTES);
    return s_pack(&m.base, max, out, n);
}

//  --------------------------------------------------------------------------
//  Encode a result payload (one record's worth).

int
ms_wire_encode_result(const ms_wire_result_t *result, uint8_t **out, size_t *n)
{
    return s_encode_result(result, MS_WIRE_MAX_PAYLOAD_BYTES, out, n);
}

//  --------------------------------------------------------------------------
//  Encode a result payload the store may carry in FRAGMENT records.

int
ms_wire_encode_result_big(const ms_wire_result_t *result, uint8_t **out,
                          size_t *n)
{
    return s_encode_result(result, MS_WIRE_MAX_RESULT_PAYLOAD_BYTES, out, n);
}

//  --------------------------------------------------------------------------
//  Decode a result payload of at most MAX bytes.

static int
s_decode_result(const uint8_t *buf, size_t n, size_t max,
                ms_wire_result_t **out)
{
    assert(out);
    *out = NULL;
    ProtobufCMessage *msg;
    int rc = s_unpack(&mswire__result_payload__descriptor, buf, n, max, &msg);
    if (rc != MS_OK)
        return rc;
    const Mswire__ResultPayload *m = (const Mswire__ResultPayload *) msg;
    ms_wire_result_t *r = calloc(1, sizeof *r);
    if (!r)
        rc = MS_ERR_NOMEM;
    else if (!s_id_in(r->task_id, &m->task_id) || !s_epoch_ok(m->epoch) ||
             (m->nonce.len != 0 && !s_id_in(r->nonce, &m->nonce)))
        rc = MS_ERR_PROTOCOL;
    else {
        r->slot = m->slot;
        r->epoch = m->epoch;
        r->has_nonce = m->nonce.len != 0;
        rc = s_text_in(m->row_json, max, &r->row_json);
        if (rc == MS_OK && !s_text_ok(r->row_json, max, true))
            rc = MS_ERR_PROTOCOL;
    }
    protobuf_c_message_free_unpacked(msg, NULL);
    if (rc != MS_OK) {
        ms_wire_result_destroy(&r);
        return rc;
    }
    *out = r;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Decode a result payload (one record's worth).

int
ms_wire_decode_result(const uint8_t *buf, size_t n, ms_wire_result_t **out)
{
    return s_decode_result(buf, n, MS_WIRE_MAX_PAYLOAD_BYTES, out);
}

//  --------------------------------------------------------------------------
//  Decode a result payload, possibly reassembled from FRAGMENT records.

int
ms_wire_decode_result_big(const uint8_t *buf, size_t n, ms_wire_result_t **out)
{
    return s_decode_result(buf, n, MS_WIRE_MAX_RESULT_PAYLOAD_BYTES, out);
}

//  --------------------------------------------------------------------------
//  Free a decoded result payload.

void
ms_wire_result_destroy(ms_wire_result_t **self_p)
{
    assert(self_p);
    if (!*self_p)
        return;
    free((*self_p)->row_json);
    free(*self_p);
    *self_p = NULL;
}

// --- FAILURE (kind 8) -------------------------------------------------------

//  --------------------------------------------------------------------------
//  True when a failure class is one this build knows.

static bool
s_failure_class_ok(uint32_t failure_class)
{
    return failure_class == MS_WIRE_FAILURE_RESOURCE ||
           failure_class == MS_WIRE_FAILURE_TASK;
}

//  --------------------------------------------------------------------------
//  Encode a failure payload.

int
ms_wire_encode_failure(const ms_wire_failure_t *failure, uint8_t **out,
                       size_t *n)
{
    assert(failure && out && n);
    *out = NULL;
    *n = 0;
    if (!s_epoch_ok(failure->epoch) ||
        !s_failure_class_ok((uint32_t) failure->failure_class) ||
        !s_text_ok(failure->reason, MS_WIRE_REASON_MAX, false))
        return MS_ERR_INVALID;
    Mswire__FailurePayload m = MSWIRE__FAILURE_PAYLOAD__INIT;
    m.task_id = s_bin(failure->task_id, MS_WIRE_ID_BYTES);
    m.slot = failure->slot;
    m.epoch = failure->epoch;
    m.failure_class = (uint32_t) failure->failure_class;
    m.reason = s_str(failure->reason);
    return s_pack_payload(&m.base, out, n);
}

//  --------------------------------------------------------------------------
//  Decode a failure payload.

int
ms_wire_decode_failure(const uint8_t *buf, size_t n, ms_wire_failure_t **out)
{
    assert(out);
    *out = NULL;
    ProtobufCMessage *msg;
    int rc = s_unpack(&mswire__failure_payload__descriptor, buf, n,
                      MS_WIRE_MAX_PAYLOAD_BYTES, &msg);
    if (rc != MS_OK)
        return rc;
    const Mswire__FailurePayload *m = (const Mswire__FailurePayload *) msg;
    ms_wire_failure_t *f = calloc(1, sizeof *f);
    if (!f)
        rc = MS_ERR_NOMEM;
    else if (!s_id_in(f->task_id, &m->task_id) || !s_epoch_ok(m->epoch) ||
             !s_failure_class_ok(m->failure_class))
        rc = MS_ERR_PROTOCOL;
    else {
        f->slot = m->slot;
        f->epoch = m->epoch;
        f->failure_class = (ms_wire_failure_class_t) m->failure_class;
        rc = s_text_in(m->reason, MS_WIRE_REASON_MAX, &f->reason);
        if (rc == MS_OK && !s_text_ok(f->reason, MS_WIRE_REASON_MAX, false))
            rc = MS_ERR_PROTOCOL;
    }
    protobuf_c_message_free_unpacked(msg, NULL);
    if (rc != MS_OK) {
        ms_wire_failure_destroy(&f);
        return rc;
    }
    *out = f;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free a decoded failure payload.

void
ms_wire_failure_destroy(ms_wire_failure_t **self_p)
{
    assert(self_p);
    if (!*self_p)
        return;
    free((*self_p)->reason);
    free(*self_p);
    *self_p = NULL;
}

// --- REEVALUATION (kind 9) -------------------------------------------------

//  --------------------------------------------------------------------------
//  True when a re-evaluation obeys its contract.

static bool
s_reeval_ok(const ms_wire_reevaluation_t *r)
{
    return (r->status == MS_WIRE_REEVAL_OK ||
            r->status == MS_WIRE_REEVAL_FAILED) &&
           memchr(r->reason, 0, sizeof r->reason) &&
           s_text_ok(r->reason, MS_WIRE_REEVAL_REASON_MAX, false);
}

//  --------------------------------------------------------------------------
//  Encode a re-evaluation payload.

int
ms_wire_encode_reevaluation(const ms_wire_reevaluation_t *reeval, uint8_t **out,
                            size_t *n)
{
    assert(reeval && out && n);
    *out = NULL;
    *n = 0;
    if (!s_reeval_ok(reeval))
        return MS_ERR_INVALID;
    Mswire__ReevaluationPayload m = MSWIRE__REEVALUATION_PAYLOAD__INIT;
    m.task_id = s_bin(reeval->task_id, MS_WIRE_ID_BYTES);
    m.target = s_bin(reeval->target, MS_WIRE_ID_BYTES);
    m.status = (uint32_t) reeval->status;
    m.test_accuracy = reeval->test_accuracy;
    m.test_loss = reeval->test_loss;
    m.val_accuracy = reeval->val_accuracy;
    m.val_loss = reeval->val_loss;
    m.reason = s_str(reeval->reason);
    return s_pack_payload(&m.base, out, n);
}

//  --------------------------------------------------------------------------
//  Decode a re-evaluation payload into a caller struct.

int
ms_wire_decode_reevaluation(const uint8_t *buf, size_t n,
                            ms_wire_reevaluation_t *out)
{
    assert(out);
    ProtobufCMessage *msg;
    int rc = s_unpack(&mswire__reevaluation_payload__descriptor, buf, n,
                      MS_WIRE_MAX_PAYLOAD_BYTES, &msg);
    if (rc != MS_OK)
        return rc;
    const Mswire__ReevaluationPayload *m =
        (const Mswire__ReevaluationPayload *) msg;
    ms_wire_reevaluation_t r;
    memset(&r, 0, sizeof r);
    const char *reason = m->reason ? m->reason : "";
    if (!s_id_in(r.task_id, &m->task_id) || !s_id_in(r.target, &m->target) ||
        strlen(reason) > MS_WIRE_REEVAL_REASON_MAX)
        rc = MS_ERR_PROTOCOL;
    else {
        r.status = (ms_wire_reeval_status_t) m->status;
        r.test_accuracy = m->test_accuracy;
        r.test_loss = m->test_loss;
        r.val_accuracy = m->val_accuracy;
        r.val_loss = m->val_loss;
        memcpy(r.reason, reason, strlen(reason) + 1);
        if (!s_reeval_ok(&r))
            rc = MS_ERR_PROTOCOL;
        else
            *out = r;
    }
    protobuf_c_message_free_unpacked(msg, NULL);
    return rc;
}

// --- FRAGMENT (kind 10) -----------------------------------------------------

//  --------------------------------------------------------------------------
//  True when a fragment obeys its contract.

static bool
s_fragment_valid(const ms_wire_fragment_t *f)
{
    if (f->inner_kind == 0 || f->inner_kind == MS_WIRE_KIND_FRAGMENT ||
        f->compression > MS_WIRE_COMPRESSION_DEFLATE || f->total_len == 0 ||
        f->total_len > MS_WIRE_MAX_LOGICAL_PAYLOAD_BYTES || f->raw_len == 0 ||
        f->raw_len > MS_WIRE_MAX_LOGICAL_PAYLOAD_BYTES || f->data_len == 0 ||
        f->data_len > MS_WIRE_MAX_PAYLOAD_BYTES || !f->data ||
        f->offset > f->total_len || f->data_len > f->total_len - f->offset)
        return false;
    return f->compression != MS_WIRE_COMPRESSION_NONE ||
           f->raw_len == f->total_len;
}

//  --------------------------------------------------------------------------
//  Encode a fragment payload.

int
ms_wire_encode_fragment(const ms_wire_fragment_t *fragment, uint8_t **out,
                        size_t *n)
{
    assert(fragment && out && n);
    *out = NULL;
    *n = 0;
    if (!s_fragment_valid(fragment))
        return MS_ERR_INVALID;
    Mswire__FragmentPayload m = MSWIRE__FRAGMENT_PAYLOAD__INIT;
    m.inner_kind = fragment->inner_kind;
    m.total_len = fragment->total_len;
    m.raw_len = fragment->raw_len;
    m.offset = fragment->offset;
    m.compression = fragment->compression;
    m.data = s_bin(fragment->data, fragment->data_len);
    m.hash = s_bin(fragment->hash, MS_WIRE_ID_BYTES);
    return s_pack_payload(&m.base, out, n);
}

//  --------------------------------------------------------------------------
//  Decode a fragment payload.

int
ms_wire_decode_fragment(const uint8_t *buf, size_t n, ms_wire_fragment_t **out)
{
    assert(out);
    *out = NULL;
    ProtobufCMessage *msg;
    int rc = s_unpack(&mswire__fragment_payload__descriptor, buf, n,
                      MS_WIRE_MAX_PAYLOAD_BYTES, &msg);
    if (rc != MS_OK)
        return rc;
    const Mswire__FragmentPayload *m = (const Mswire__FragmentPayload *) msg;
    ms_wire_fragment_t *f = calloc(1, sizeof *f);
    if (!f)
        rc = MS_ERR_NOMEM;
    else if (!s_id_in(f->hash, &m->hash))
        rc = MS_ERR_PROTOCOL;
    else {
        f->inner_kind = m->inner_kind;
        f->total_len = m->total_len;
        f->raw_len = m->raw_len;
        f->offset = m->offset;
        f->compression = m->compression;
        rc = s_bytes_in(&m->data, MS_WIRE_MAX_PAYLOAD_BYTES, &f->data,
                        &f->data_len);
        if (rc == MS_OK && !s_fragment_valid(f))
            rc = MS_ERR_PROTOCOL;
    }
    protobuf_c_message_free_unpacked(msg, NULL);
    if (rc != MS_OK) {
        ms_wire_fragment_destroy(&f);
        return rc;
    }
    *out = f;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free a decoded fragment payload.

void
ms_wire_fragment_destroy(ms_wire_fragment_t **self_p)
{
    assert(self_p);
    if (!*self_p)
        return;
    free((*self_p)->data);
    free(*self_p);
    *self_p = NULL;
}
