/*  =========================================================================
    ms_test_fs - file-system helpers shared by the tests

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Header-only (static functions) so each test executable stays one file.
*/
#ifndef MS_TEST_FS_H
#define MS_TEST_FS_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

//  --------------------------------------------------------------------------
//  Remove a directory tree, or a file (the test's own temporary dirs
//  only: paths under 1 KiB; what cannot be removed is left).

static inline void
ms_tf_rm_rf(const char *path)
{
    DIR *dir = opendir(path);
    if (dir) {
        struct dirent *ent;
        while ((ent = readdir(dir))) {
            if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, ".."))
                continue;
            char sub[1024];
            int n = snprintf(sub, sizeof sub, "%s/%s", path, ent->d_name);
            if (n > 0 && (size_t) n < sizeof sub)
                ms_tf_rm_rf(sub);
        }
        closedir(dir);
        rmdir(path);
    } else {
        unlink(path);
    }
}

//  --------------------------------------------------------------------------
//  Write TEXT to the file PATH (made, or emptied first). Returns 0, or -1
//  when the file cannot be written (the test asserts it).

static inline int
ms_tf_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int rc = fputs(text, f) < 0 ? -1 : 0;
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

//  --------------------------------------------------------------------------
//  As ms_tf_write, into the file DIR/NAME; its path goes into OUT (N
//  bytes). -1 also when the path does not fit.

static inline int
ms_tf_write_in(const char *dir, const char *name, const char *text, char *out,
               size_t n)
{
    int len = snprintf(out, n, "%s/%s", dir, name);
    if (len < 0 || (size_t) len >= n)
        return -1;
    return ms_tf_write(out, text);
}

//  --------------------------------------------------------------------------
//  Fork a child that reports over a pipe: CHILD(ARG, FD) runs in the
//  child with the pipe's write end and must end in _exit; the parent
//  gets the child's pid, and the pipe's read end in *FD (the parent
//  closes it). -1 (nothing forked) when the pipe or the fork fails.

static inline pid_t
ms_tf_fork_piped(void (*child)(const void *arg, int fd), const void *arg,
                 int *fd)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        child(arg, fds[1]);
        _exit(99); // the child did not end itself
    }
    close(fds[1]);
    if (pid < 0)
        close(fds[0]);
    else
        *fd = fds[0];
    return pid;
}

#endif
