/*  =========================================================================
    ms_node_command - HTTP -> loop requests: the queue HTTP threads fill
    and the node loop drains

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    One FIFO of commands under one mutex; one condition variable that the
    loop broadcasts after each answer (the waiting threads check their own
    command's done flag); one self-pipe that wakes the loop's poll. A
    command belongs to its HTTP thread until it is queued, then to the
    queue until the loop answers it; an HTTP thread that stops waiting
    (MS_NODE_COMMAND_WAIT_MS) marks it abandoned under the mutex, and the
    loop frees it when it gets to it. Moved out of ms_node.c ("One owner
    per concept") with the text of its functions unchanged.
*/
#include "ms_node_command.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

//  Kinds of commands queued by HTTP threads.
typedef enum {
    S_COMMAND_SUBMIT = 0,    // a spec submission
    S_COMMAND_CONTROL = 1,   // a sweep life-cycle action
    S_COMMAND_BLOB_PUT = 2,  // an uploaded file to adopt as a blob
    S_COMMAND_AUTHORITY = 3, // an authority item or certificate bundle
    S_COMMAND_LEASES = 4,    // the leases of a task's slots (GET /tasks)
    S_COMMAND_BLOBS = 5,     // which blobs are held (GET /datasets)
    S_COMMAND_BLOB_PATH = 6, // the file of a held blob (GET .../weights)
} s_command_kind_t;

//  A command queued by an HTTP thread.
typedef struct s_command {
    struct s_command *next; // queue link
    s_command_kind_t kind;  // what to do
    char *text;             // spec text (owned; SUBMIT)
    size_t n;               // bytes in text
    ms_spec_t *spec;        // text parsed by the HTTP thread (owned;
                            // SUBMIT), or NULL
    char *files;            // uploaded files "ROLE:HEX,..." (owned;
                            // SUBMIT) or NULL; blob path (BLOB_PUT)
    ms_hash_t hash;         // the blob (BLOB_PUT)
    ms_hash_t sweep_id;     // the sweep (CONTROL)
    int action;             // the action (CONTROL), the caller's code
    int32_t priority;       // new priority (CONTROL, priority)
    bool done;              // the loop answered
    bool abandoned;         // the HTTP thread gave up waiting: loop frees
    int rc;                 // answer
    ms_diag_t diag;         // answer
    char *summary;          // answer (malloc'd), taken by the HTTP thread
} s_command_t;

struct ms_node_command {
    ms_node_command_iface_t iface;  // how the loop answers
    int wake[2];                    // self-pipe: API commands, stop, reload
    volatile sig_atomic_t stopping; // refuse new commands
    pthread_mutex_t lock;           // guards queue and the commands in it
    pthread_cond_t answered;        // a command was answered
    s_command_t *queue;             // commands to run (FIFO)
};

//  --------------------------------------------------------------------------
//  Free a command and what it owns (not its summary).

static void
s_command_free(s_command_t *cmd)
{
    free(cmd->text);
    free(cmd->files);
    ms_spec_destroy(&cmd->spec);
    free(cmd);
}

//  --------------------------------------------------------------------------
//  A new command of KIND on HASH (may be NULL), or NULL (no memory).

static s_command_t *
s_command_new(s_command_kind_t kind, const ms_hash_t *hash)
{
    s_command_t *cmd = calloc(1, sizeof *cmd);
    if (cmd) {
        cmd->kind = kind;
        if (hash)
            cmd->hash = *hash;
    }
    return cmd;
}

//  --------------------------------------------------------------------------
//  Make the queue and the wake pipe.

int
ms_node_command_open(ms_node_command_t **out,
                     const ms_node_command_iface_t *iface, ms_diag_t *diag)
{
    *out = NULL;
    ms_node_command_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    self->iface = *iface;
    self->wake[0] = self->wake[1] = -1;
    pthread_mutex_init(&self->lock, NULL);
    pthread_cond_init(&self->answered, NULL);
    if (pipe(self->wake) != 0) {
        int rc =
            ms_diag_set_code(diag, MS_ERR_IO, "pipe", "%s", strerror(errno));
        ms_node_command_destroy(&self);
        return rc;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(self->wake[i], F_SETFL,
              fcntl(self->wake[i], F_GETFL) | O_NONBLOCK);
        fcntl(self->wake[i], F_SETFD, FD_CLOEXEC);
    }
    *out = self;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free the queue and close the pipe.

void
ms_node_command_destroy(ms_node_command_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_node_command_t *self = *self_p;
    while (self->queue) {
        s_command_t *cmd = self->queue;
        self->queue = cmd->next;
        free(cmd->summary);
        s_command_free(cmd);
    }
    if (self->wake[0] >= 0)
        close(self->wake[0]);
    if (self->wake[1] >= 0)
        close(self->wake[1]);
    pthread_cond_destroy(&self->answered);
    pthread_mutex_destroy(&self->lock);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Refuse new commands (async-signal-safe).

void
ms_node_command_stop(ms_node_command_t *self)
{
    if (self)
        self->stopping = 1;
}

//  --------------------------------------------------------------------------
//  Wake the loop from a signal handler or another thread: one byte on the
//  wake pipe (async-signal-safe; errno kept).

void
ms_node_command_wake(ms_node_command_t *self, char why)
{
    if (self && self->wake[1] >= 0) {
        int saved = errno;
        ssize_t w = write(self->wake[1], &why, 1);
        (void) w;
        errno = saved;
    }
}

//  --------------------------------------------------------------------------
//  The read end of the wake pipe.

int
ms_node_command_wake_fd(const ms_node_command_t *self)
{
    return self->wake[0];
}

//  --------------------------------------------------------------------------
//  Empty the wake pipe.

void
ms_node_command_drain(ms_node_command_t *self)
{
    char buf[256];
    while (read(self->wake[0], buf, sizeof buf) > 0)
        ;
}

//  --------------------------------------------------------------------------
//  Run one command through the iface; *summary gets its answer's text.

static int
s_command_answer(ms_node_command_t *self, s_command_t *cmd, char **summary,
                 ms_diag_t *diag)
{
    const ms_node_command_iface_t *f = &self->iface;
    if (cmd->kind == S_COMMAND_CONTROL)
        return f->control(f->arg, &cmd->sweep_id, cmd->action, cmd->priority,
                          diag);
    if (cmd->kind == S_COMMAND_BLOB_PUT)
        return f->blob_put(f->arg, &cmd->hash, cmd->files, diag);
    if (cmd->kind == S_COMMAND_AUTHORITY)
        return f->authority(f->arg, cmd->text, cmd->n, summary, diag);
    if (cmd->kind == S_COMMAND_LEASES)
        return f->task_leases(f->arg, &cmd->hash, summary);
    if (cmd->kind == S_COMMAND_BLOBS)
        return f->blobs_held(f->arg, cmd->text, summary);
    if (cmd->kind == S_COMMAND_BLOB_PATH)
        return f->blob_path(f->arg, &cmd->hash, summary);
    ms_spec_t *spec = cmd->spec;
    cmd->spec = NULL; // taken
    return f->submit(f->arg, cmd->text, cmd->n, spec, cmd->files, summary,
                     diag);
}

//  --------------------------------------------------------------------------
//  Run the queued API commands.

size_t
ms_node_command_run(ms_node_command_t *self)
{
    size_t n_run = 0;
    for (;;) {
        pthread_mutex_lock(&self->lock);
        s_command_t *cmd = self->queue;
        if (cmd)
            self->queue = cmd->next;
        pthread_mutex_unlock(&self->lock);
        if (!cmd)
            return n_run;
        n_run++;
        ms_diag_t diag;
        ms_diag_clear(&diag);
        char *summary = NULL;
        int rc = s_command_answer(self, cmd, &summary, &diag);
        pthread_mutex_lock(&self->lock);
        cmd->rc = rc;
        cmd->diag = diag;
        cmd->summary = summary;
        cmd->done = true;
        if (cmd->abandoned) {
            free(cmd->summary);
            s_command_free(cmd);
        }
        pthread_cond_broadcast(&self->answered);
        pthread_mutex_unlock(&self->lock);
    }
}

//  --------------------------------------------------------------------------
//  Answer every queued command with rc (at shutdown).

void
ms_node_command_fail(ms_node_command_t *self, int rc)
{
    if (!self)
        return;
    pthread_mutex_lock(&self->lock);
    while (self->queue) {
        s_command_t *cmd = self->queue;
        self->queue = cmd->next;
        cmd->rc = rc;
        ms_diag_set_code(&cmd->diag, rc, "node", "the node is stopping");
        cmd->done = true;
        if (cmd->abandoned) {
            s_command_free(cmd);
        }
    }
    pthread_cond_broadcast(&self->answered);
    pthread_mutex_unlock(&self->lock);
}

//  --------------------------------------------------------------------------
//  Queue a command (taken) and wait for the loop's answer; *summary gets
//  the answer's summary (may be NULL).

static int
s_queue(ms_node_command_t *self, s_command_t *cmd, char **summary,
        ms_diag_t *diag)
{
    pthread_mutex_lock(&self->lock);
    if (self->stopping) {
        pthread_mutex_unlock(&self->lock);
        s_command_free(cmd);
        return ms_diag_set_code(diag, MS_ERR_INTERRUPTED, "node",
                                "the node is stopping");
    }
    s_command_t **tail = &self->queue;
    while (*tail)
        tail = &(*tail)->next;
    *tail = cmd;
    pthread_mutex_unlock(&self->lock);
    ssize_t w = write(self->wake[1], "c", 1);
    (void) w;

    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += MS_NODE_COMMAND_WAIT_MS / 1000;
    pthread_mutex_lock(&self->lock);
    while (!cmd->done) {
        if (pthread_cond_timedwait(&self->answered, &self->lock, &until) ==
            ETIMEDOUT)
            break;
    }
    int rc;
    if (cmd->done) {
        rc = cmd->rc;
        *diag = cmd->diag;
        if (summary)
            *summary = cmd->summary;
        else
            free(cmd->summary);
        s_command_free(cmd);
    } else {
        cmd->abandoned = true; // the loop frees it when it gets to it
        rc = ms_diag_set_code(diag, MS_ERR_TIMEOUT, "node",
                              "the node did not answer in time");
    }
    pthread_mutex_unlock(&self->lock);
    return rc;
}

//  --------------------------------------------------------------------------
//  Queue a submission and wait for the loop's answer.

int
ms_node_command_submit(ms_node_command_t *self, const char *text, size_t n,
                       const char *files, char **summary_json, ms_diag_t *diag)
{
    *summary_json = NULL;
    s_command_t *cmd = s_command_new(S_COMMAND_SUBMIT, NULL);
    if (!cmd)
        return MS_ERR_NOMEM;
    cmd->text = malloc(n + 1);
    cmd->files = files ? strdup(files) : NULL;
    if (!cmd->text || (files && !cmd->files)) {
        s_command_free(cmd);
        return MS_ERR_NOMEM;
    }
    memcpy(cmd->text, text, n);
    cmd->text[n] = 0;
    cmd->n = n;
    // Parse and validate here, in the HTTP thread: a bad or hostile spec
    // is refused without reaching the node loop, and the loop does not
    // spend a good one's parse and expansion either (it only stores it).
    int rc = ms_spec_parse(cmd->text, n, NULL, &cmd->spec, diag);
    const ms_spec_dataset_t *d = cmd->spec ? ms_spec_dataset(cmd->spec) : NULL;
    if (rc == MS_OK && files && d->builtin)
        rc = ms_diag_set(diag, "files",
                         "given for the built-in dataset %s, which takes no "
                         "files (?files= is for a spec naming train and "
                         "test files)",
                         d->name);
    if (rc != MS_OK) {
        s_command_free(cmd);
        return rc;
    }
    return s_queue(self, cmd, summary_json, diag);
}

//  --------------------------------------------------------------------------
//  Queue an uploaded file (DATA_DIR/blobs/tmp/upload-*) to become a blob
//  (the loop owns the blob store) and wait for the hash check.

int
ms_node_command_blob_put(ms_node_command_t *self, const ms_hash_t *hash,
                         const char *tmp_path, ms_diag_t *diag)
{
    s_command_t *cmd = s_command_new(S_COMMAND_BLOB_PUT, hash);
    if (!cmd || !(cmd->files = strdup(tmp_path))) {
        free(cmd);
        unlink(tmp_path);
        return MS_ERR_NOMEM;
    }
    return s_queue(self, cmd, NULL, diag);
}

//  --------------------------------------------------------------------------
//  Queue an authority item (POST /api/v1/authority) and wait for the
//  loop's answer (the loop owns the members table, the mesh and the set).

int
ms_node_command_authority(ms_node_command_t *self, const char *text, size_t n,
                          char **summary_json, ms_diag_t *diag)
{
    *summary_json = NULL;
    s_command_t *cmd = s_command_new(S_COMMAND_AUTHORITY, NULL);
    if (!cmd || !(cmd->text = malloc(n + 1))) {
        free(cmd);
        return MS_ERR_NOMEM;
    }
    memcpy(cmd->text, text, n);
    cmd->text[n] = 0;
    cmd->n = n;
    return s_queue(self, cmd, summary_json, diag);
}

//  --------------------------------------------------------------------------
//  Queue a sweep life-cycle action and wait for the loop's answer.

int
ms_node_command_control(ms_node_command_t *self, const ms_hash_t *sweep_id,
                        int action, int32_t priority, ms_diag_t *diag)
{
    s_command_t *cmd = s_command_new(S_COMMAND_CONTROL, NULL);
    if (!cmd)
        return MS_ERR_NOMEM;
    cmd->sweep_id = *sweep_id;
    cmd->action = action;
    cmd->priority = priority;
    return s_queue(self, cmd, NULL, diag);
}

//  --------------------------------------------------------------------------
//  Run a query command on the loop (s_queue; cmd is consumed) and parse
//  its answer as JSON: a new value, or NULL when it could not answer.

static json_t *
s_queue_json(ms_node_command_t *self, s_command_t *cmd)
{
    char *summary = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    if (s_queue(self, cmd, &summary, &diag) != MS_OK || !summary) {
        free(summary);
        return NULL;
    }
    json_error_t err;
    json_t *value = json_loads(summary, 0, &err);
    free(summary);
    return value;
}

//  --------------------------------------------------------------------------
//  Ask the loop for the leases of a task's slots (it owns the lease
//  table); NULL when it cannot answer.

json_t *
ms_node_command_task_leases(ms_node_command_t *self, const ms_hash_t *task_id)
{
    s_command_t *cmd = s_command_new(S_COMMAND_LEASES, task_id);
    return cmd ? s_queue_json(self, cmd) : NULL;
}

//  --------------------------------------------------------------------------
//  Ask the loop which blobs it holds (it owns the blob store); NULL when
//  it cannot answer.

json_t *
ms_node_command_blobs_held(ms_node_command_t *self, const json_t *hashes)
{
    s_command_t *cmd = s_command_new(S_COMMAND_BLOBS, NULL);
    if (!cmd)
        return NULL;
    cmd->text = json_dumps(hashes, JSON_COMPACT);
    if (!cmd->text) {
        free(cmd);
        return NULL;
    }
    cmd->n = strlen(cmd->text);
    return s_queue_json(self, cmd);
}

//  --------------------------------------------------------------------------
//  Ask the loop for the file of a held blob (it owns the blob store); NULL
//  when it is not held or the loop cannot answer.

char *
ms_node_command_blob_path(ms_node_command_t *self, const ms_hash_t *hash)
{
    s_command_t *cmd = s_command_new(S_COMMAND_BLOB_PATH, hash);
    json_t *obj = cmd ? s_queue_json(self, cmd) : NULL;
    const char *path = json_string_value(json_object_get(obj, "path"));
    char *copy = path ? strdup(path) : NULL;
    json_decref(obj);
    return copy;
}
