/*  =========================================================================
    ms_data_dir - a node's data dir: its layout and the one-node lock

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    See ms_data_dir.h.
*/
#include "ms_data_dir.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ms_data_dir {
    char *dir;   // the data dir (owned copy)
    int lock_fd; // DATA_DIR/node.lock, locked while open; -1: none
};

//  --------------------------------------------------------------------------
//  mkdir -p with mode 0700 for the last part.

static int
s_mkdirs(const char *path, ms_diag_t *diag)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int) sizeof tmp)
        return ms_diag_set(diag, path, "path too long");
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return ms_diag_set_code(diag, MS_ERR_IO, tmp, "cannot create: %s",
                                    strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
        return ms_diag_set_code(diag, MS_ERR_IO, tmp, "cannot create: %s",
                                strerror(errno));
    struct stat st;
    if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode))
        return ms_diag_set_code(diag, MS_ERR_IO, tmp, "not a directory");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Take the lock on DATA_DIR/node.lock and write our pid in it.

static int
s_lock(ms_data_dir_t *self, ms_diag_t *diag)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/node.lock", self->dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return ms_diag_set_code(diag, MS_ERR_IO, path, "cannot open: %s",
                                strerror(errno));
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_SETLK, &fl) != 0) {
        int err = errno;
        struct flock who = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        long pid = fcntl(fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK
                       ? (long) who.l_pid
                       : -1;
        close(fd);
        if (err == EACCES || err == EAGAIN)
            return ms_diag_set_code(
                diag, MS_ERR_CONFLICT, self->dir,
                "in use by another node (pid %ld): one node per data dir", pid);
        return ms_diag_set_code(diag, MS_ERR_IO, path, "cannot lock: %s",
                                strerror(err));
    }
    char text[32];
    int n = snprintf(text, sizeof text, "%ld\n", (long) getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t) n, 0) != n) {
        // The pid is only a hint for the message above; the lock is what
        // matters.
    }
    self->lock_fd = fd;
    return MS_OK;
}

int
ms_data_dir_open(ms_data_dir_t **out, const char *dir, ms_diag_t *diag)
{
    assert(out && dir);
    *out = NULL;
    ms_data_dir_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    self->lock_fd = -1;
    int rc = MS_ERR_NOMEM;
    if ((self->dir = strdup(dir)) != NULL)
        rc = s_mkdirs(self->dir, diag);
    if (rc == MS_OK)
        rc = s_lock(self, diag);
    if (rc != MS_OK) {
        ms_data_dir_destroy(&self);
        return rc;
    }
    *out = self;
    return MS_OK;
}

void
ms_data_dir_destroy(ms_data_dir_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_data_dir_t *self = *self_p;
    if (self->lock_fd >= 0)
        close(self->lock_fd); // releases the lock
    free(self->dir);
    free(self);
    *self_p = NULL;
}

int
ms_data_dir_path(const ms_data_dir_t *self, const char *name, char *path,
                 size_t n)
{
    assert(self && name && path);
    int len = snprintf(path, n, "%s/%s", self->dir, name);
    return len >= 0 && (size_t) len < n ? MS_OK : MS_ERR_INVALID;
}

int
ms_data_dir_make(const ms_data_dir_t *self, const char *name, char *path,
                 size_t n, ms_diag_t *diag)
{
    if (ms_data_dir_path(self, name, path, n) != MS_OK)
        return ms_diag_set(diag, name, "path too long");
    return s_mkdirs(path, diag);
}
