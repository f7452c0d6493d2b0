/*  =========================================================================
    ms_node_command - HTTP -> loop requests: the queue HTTP threads fill
    and the node loop drains

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    HTTP threads never write to the store themselves (STYLE.md
    "Concurrency"): a request that needs the loop's state (a submission, a
    blob upload, an authority item, a sweep life-cycle action, the leases
    of a task, the blobs held, the file of a blob) is queued as a command,
    the loop is woken through a pipe, and the HTTP thread waits (bounded,
    MS_NODE_COMMAND_WAIT_MS) for the loop's answer. A thread that gave up
    waiting leaves the command to the loop, which frees it once answered.
    The same pipe carries the node's stop and reload requests, whose only
    work is a flag and a write(), both async-signal-safe.

    The class owns the queue, its mutex and condition variable, and the
    wake pipe. The loop answers the commands through ms_node_command_iface_t
    (given at open); the class never calls into ms_node.

    Threads: the ms_node_command_submit .. _blob_path calls are for HTTP
    threads (any number at once); _run, _drain and _wake_fd for the loop
    thread; _stop and _wake are async-signal-safe; _open, _fail and
    _destroy are the owner's.
*/
#ifndef MS_NODE_COMMAND_H
#define MS_NODE_COMMAND_H

#include "ms_err.h"
#include "ms_hash.h"
#include "ms_spec.h"

#include <jansson.h>

#include <stddef.h>
#include <stdint.h>

#define MS_NODE_COMMAND_WAIT_MS 60000 // longest an HTTP thread waits

typedef struct ms_node_command ms_node_command_t;

//  How the loop answers each kind of command. Every function gets ARG and
//  is called on the loop thread, from inside ms_node_command_run only. A
//  *summary set by a function is malloc'd text the class hands to the
//  waiting thread (or frees).
typedef struct {
    void *arg;
    //  Store the spec TEXT (N bytes, terminated), parsed by the HTTP
    //  thread into SPEC (taken), with the uploaded FILES ("ROLE:HEX,...")
    //  or NULL; on MS_OK *summary is the submission's JSON summary.
    int (*submit)(void *arg, const char *text, size_t n, ms_spec_t *spec,
                  const char *files, char **summary, ms_diag_t *diag);
    //  Apply the life-cycle ACTION (the caller's code, handed through) with
    //  PRIORITY to SWEEP_ID.
    int (*control)(void *arg, const ms_hash_t *sweep_id, int action,
                   int32_t priority, ms_diag_t *diag);
    //  Adopt the uploaded file TMP_PATH (consumed) as the blob of HASH.
    int (*blob_put)(void *arg, const ms_hash_t *hash, const char *tmp_path,
                    ms_diag_t *diag);
    //  Take an authority item or certificate bundle TEXT (N bytes,
    //  terminated); on MS_OK *summary is {"digest","type","new"}.
    int (*authority)(void *arg, const char *text, size_t n, char **summary,
                     ms_diag_t *diag);
    //  The leases of TASK_ID's slots as JSON array text in *summary.
    int (*task_leases)(void *arg, const ms_hash_t *task_id, char **summary);
    //  Which of the blobs named in TEXT (a JSON array of hex hashes) are
    //  held, as JSON object text {hex: bool} in *summary.
    int (*blobs_held)(void *arg, const char *text, char **summary);
    //  The file of the held blob HASH as JSON text {"path": PATH} in
    //  *summary; MS_ERR_NOTFOUND when it is not held.
    int (*blob_path)(void *arg, const ms_hash_t *hash, char **summary);
} ms_node_command_iface_t;

//  Make the queue and the wake pipe (both ends non-blocking and
//  close-on-exec) with IFACE (copied). On MS_OK *out is the new queue
//  (caller owns it; free it with ms_node_command_destroy()). Returns
//  MS_OK; MS_ERR_NOMEM; MS_ERR_IO (no pipe: diag "pipe" and the reason).
int ms_node_command_open(ms_node_command_t **out,
                         const ms_node_command_iface_t *iface, ms_diag_t *diag);

//  Free the queue (commands still in it are freed unanswered: call it
//  once no HTTP thread can wait any more) and close the pipe. NULL-safe;
//  nulls *self_p.
void ms_node_command_destroy(ms_node_command_t **self_p);

//  From now on refuse new commands (MS_ERR_INTERRUPTED, "the node is
//  stopping"). Async-signal-safe (a flag). NULL-safe.
void ms_node_command_stop(ms_node_command_t *self);

//  Wake the loop: one byte WHY on the wake pipe (async-signal-safe; errno
//  kept). NULL-safe.
void ms_node_command_wake(ms_node_command_t *self, char why);

//  The read end of the wake pipe, for the loop's poll (borrowed; valid
//  until destroy).
int ms_node_command_wake_fd(const ms_node_command_t *self);

//  Empty the wake pipe (loop thread).
void ms_node_command_drain(ms_node_command_t *self);

//  Run the queued commands in order through the iface and answer each
//  (loop thread). Returns how many ran.
size_t ms_node_command_run(ms_node_command_t *self);

//  Answer every queued command with RC (diag "node": "the node is
//  stopping") and wake their threads (at shutdown). NULL-safe.
void ms_node_command_fail(ms_node_command_t *self, int rc);

//  Queue a submission of the spec TEXT (N bytes) with the uploaded FILES
//  ("ROLE:HEX,...", or NULL) and wait for the loop's answer. The spec is
//  parsed and validated here, in the calling thread: a bad or hostile
//  spec is refused without reaching the loop. On MS_OK *summary_json is
//  the malloc'd summary object text (caller frees), else NULL. Returns
//  the loop's answer; MS_ERR_INVALID (bad spec, or files given for a
//  built-in dataset: diag); MS_ERR_NOMEM; MS_ERR_INTERRUPTED (stopping);
//  MS_ERR_TIMEOUT (no answer within MS_NODE_COMMAND_WAIT_MS).
int ms_node_command_submit(ms_node_command_t *self, const char *text, size_t n,
                           const char *files, char **summary_json,
                           ms_diag_t *diag);

//  Queue the uploaded file TMP_PATH (consumed either way) to become the
//  blob of HASH and wait for the loop's hash check. Returns the loop's
//  answer; MS_ERR_NOMEM; MS_ERR_INTERRUPTED; MS_ERR_TIMEOUT.
int ms_node_command_blob_put(ms_node_command_t *self, const ms_hash_t *hash,
                             const char *tmp_path, ms_diag_t *diag);

//  Queue an authority item TEXT (N bytes) and wait for the loop's answer;
//  on MS_OK *summary_json is the malloc'd answer text (caller frees), else
//  NULL. Returns the loop's answer; MS_ERR_NOMEM; MS_ERR_INTERRUPTED;
//  MS_ERR_TIMEOUT.
int ms_node_command_authority(ms_node_command_t *self, const char *text,
                              size_t n, char **summary_json, ms_diag_t *diag);

//  Queue the life-cycle ACTION (the caller's code, handed to the iface
//  unchanged) with PRIORITY on SWEEP_ID and wait for the loop's answer.
//  Returns the loop's answer; MS_ERR_NOMEM; MS_ERR_INTERRUPTED;
//  MS_ERR_TIMEOUT.
int ms_node_command_control(ms_node_command_t *self, const ms_hash_t *sweep_id,
                            int action, int32_t priority, ms_diag_t *diag);

//  Ask the loop for the leases of TASK_ID's slots: a new JSON array
//  (caller json_decref's it), or NULL when it cannot answer.
json_t *ms_node_command_task_leases(ms_node_command_t *self,
                                    const ms_hash_t *task_id);

//  Ask the loop which of HASHES (a JSON array of hex strings, borrowed)
//  it holds: a new JSON object {hex: bool}, or NULL when it cannot answer.
json_t *ms_node_command_blobs_held(ms_node_command_t *self,
                                   const json_t *hashes);

//  Ask the loop for the file of the held blob HASH: a malloc'd path
//  (caller frees), or NULL when it is not held or the loop cannot answer.
char *ms_node_command_blob_path(ms_node_command_t *self, const ms_hash_t *hash);

#endif
