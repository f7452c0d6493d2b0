/*  =========================================================================
    ms_dashboard - the dashboard's static files, looked up safely in their
    directory

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Two checks, each enough on its own for the common attacks, together
    for the rest: the name is refused before any system call when a
    segment is "." or ".." or empty (so "%2e%2e/", decoded by the HTTP
    layer, and "a//b" never reach the file system), and the resolved path
    must still start with the resolved directory plus '/' (so a symbolic
    link inside the directory that points elsewhere is refused too). The
    file is then opened with O_NOFOLLOW on its resolved path and checked
    with fstat on the descriptor: what is answered is what was checked.
*/
#define _DEFAULT_SOURCE // realpath
#include "ms_dashboard.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

//  --------------------------------------------------------------------------
//  Check a relative name segment by segment (see the banner).

static int
s_check_name(const char *rel, size_t n, ms_diag_t *diag)
{
    if (n == 0)
        return ms_diag_set(diag, "dashboard", "empty file name");
    if (n > MS_DASHBOARD_PATH_MAX)
        return ms_diag_set(diag, "dashboard", "file name longer than %d bytes",
                           MS_DASHBOARD_PATH_MAX);
    if (memchr(rel, 0, n))
        return ms_diag_set(diag, "dashboard", "NUL byte in the file name");
    if (memchr(rel, '\\', n))
        return ms_diag_set(diag, "dashboard", "backslash in the file name");
    if (rel[0] == '/')
        return ms_diag_set(diag, "dashboard", "absolute file name");
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && rel[i] != '/')
            continue;
        size_t len = i - start;
        if (len == 0 || (len == 1 && rel[start] == '.') ||
            (len == 2 && rel[start] == '.' && rel[start + 1] == '.'))
            return ms_diag_set(diag, "dashboard",
                               "'%.*s': empty, '.' or '..' path segment",
                               (int) n, rel);
        start = i + 1;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Open a dashboard file.

int
ms_dashboard_open_file(const char *dir, const char *rel, size_t n,
                       ms_dashboard_file_t *out, ms_diag_t *diag)
{
    memset(out, 0, sizeof *out);
    out->fd = -1;
    int rc = s_check_name(rel, n, diag);
    if (rc != MS_OK)
        return rc;
    char *root = dir ? realpath(dir, NULL) : NULL;
    if (!root)
        return ms_diag_set_code(diag, MS_ERR_IO, "dashboard", "'%s': %s",
                                dir ? dir : "(none)",
                                dir ? strerror(errno) : "no directory");
    size_t root_len = strlen(root);
    size_t want = root_len + 1 + n + 1;
    char *joined = malloc(want);
    char *real = NULL;
    if (!joined) {
        free(root);
        return MS_ERR_NOMEM;
    }
    snprintf(joined, want, "%s/%.*s", root, (int) n, rel);
    real = realpath(joined, NULL);
    if (!real) {
        rc = ms_diag_set_code(diag, MS_ERR_NOTFOUND, "dashboard",
                              "'%.*s': no such file", (int) n, rel);
        goto done;
    }
    // Inside the directory: the real path is ROOT/... (ROOT "/" aside).
    bool inside = strcmp(root, "/") == 0
                      ? real[0] == '/' && real[1] != 0
                      : strncmp(real, root, root_len) == 0 &&
                            real[root_len] == '/' && real[root_len + 1] != 0;
    if (!inside) {
        rc = ms_diag_set_code(diag, MS_ERR_NOTFOUND, "dashboard",
                              "'%.*s': outside the dashboard directory",
                              (int) n, rel);
        goto done;
    }
    int fd = open(real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        rc = ms_diag_set_code(
            diag, errno == ENOENT ? MS_ERR_NOTFOUND : MS_ERR_IO, "dashboard",
            "'%.*s': %s", (int) n, rel, strerror(errno));
        goto done;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        rc = ms_diag_set_code(diag, MS_ERR_NOTFOUND, "dashboard",
                              "'%.*s': not a regular file", (int) n, rel);
        goto done;
    }
    out->fd = fd;
    out->size_bytes = (uint64_t) st.st_size;
    out->mtime_s = (int64_t) st.st_mtim.tv_sec;
    out->mime = ms_dashboard_mime(real);
    uint64_t mtime_ns = (uint64_t) st.st_mtim.tv_sec * 1000000000u +
                        (uint64_t) st.st_mtim.tv_nsec;
    snprintf(out->etag, sizeof out->etag, "\"%" PRIx64 "-%" PRIx64 "\"",
             out->size_bytes, mtime_ns);
    rc = MS_OK;
done:
    free(real);
    free(joined);
    free(root);
    return rc;
}

//  --------------------------------------------------------------------------
//  The content type of a name, by extension.

const char *
ms_dashboard_mime(const char *name)
{
    static const struct {
        const char *ext, *mime;
    } table[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".map", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".txt", "text/plain; charset=utf-8"},
        {".woff2", "font/woff2"},
    };
    const char *slash = strrchr(name, '/');
    const char *dot = strrchr(slash ? slash : name, '.');
    for (size_t i = 0; dot && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(dot, table[i].ext) == 0)
            return table[i].mime;
    return "application/octet-stream";
}

//  --------------------------------------------------------------------------
//  The daemon's default dashboard directory.

const char *
ms_dashboard_default_dir(const char *build_dir, const char *installed_dir)
{
    const char *env = getenv("MESHSWEEP_DASHBOARD_DIR");
    if (env && *env)
        return env;
    struct stat st;
    if (build_dir && *build_dir && stat(build_dir, &st) == 0 &&
        S_ISDIR(st.st_mode))
        return build_dir;
    return installed_dir;
}
