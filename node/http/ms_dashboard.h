/*  =========================================================================
    ms_dashboard - the dashboard's static files, looked up safely in their
    directory

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The node serves the dashboard (index.html, app.js, style.css and the
    plotting library under vendor/) from one directory: the build tree's
    BUILD/dashboard or the installed share/meshsweep/dashboard
    (docs/DASHBOARD.md). A request names a file relative to that
    directory; this module turns the name into an open regular file that
    is certainly inside it, or refuses:

      - the name is checked before the file system sees it: no NUL byte,
        no backslash, no empty, "." or ".." segment, no leading '/',
        at most MS_DASHBOARD_PATH_MAX bytes;
      - then both the directory and the file are resolved with
        realpath(3) and the file's real path must lie under the
        directory's (a symbolic link that leads out is refused; one that
        stays inside is followed);
      - only a regular file is opened (not a directory, device or FIFO),
        with O_NOFOLLOW on the resolved path and fstat on the descriptor.

    The HTTP side (ms_api) decodes the URL, calls ms_dashboard_open_file
    and answers with the descriptor, the MIME type of the fixed table
    below, Cache-Control: no-cache, an ETag and Last-Modified (a client
    revalidates and gets 304 while the file is unchanged).
*/
#ifndef MS_DASHBOARD_H
#define MS_DASHBOARD_H

#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

#define MS_DASHBOARD_PATH_MAX 256 // longest relative name accepted
#define MS_DASHBOARD_ETAG_MAX 48  // ETag text with its quotes and NUL

//  An opened dashboard file.
typedef struct {
    int fd;                           // open for reading (caller closes)
    uint64_t size_bytes;              // its size
    int64_t mtime_s;                  // modification time, Unix seconds
    const char *mime;                 // content type (static string)
    char etag[MS_DASHBOARD_ETAG_MAX]; // "\"SIZE-MTIME_NS\"" in hex
} ms_dashboard_file_t;

//  Open the file named rel (n bytes, not NUL-terminated necessarily;
//  relative to dir, e.g. "index.html" or "vendor/plotly.min.js") for
//  reading, as described above. On MS_OK *out holds an open descriptor
//  the caller must close. Returns MS_OK; MS_ERR_INVALID (a malformed
//  name: NUL, "..", ".", empty segment, backslash, too long: diag);
//  MS_ERR_NOTFOUND (no such file, not a regular file, or its real path
//  leaves dir: diag; the HTTP answer is 404 either way, so a client
//  cannot probe what lies outside); MS_ERR_IO (dir itself cannot be
//  resolved, or open/fstat failed: diag). Thread-safe (no shared state).
int ms_dashboard_open_file(const char *dir, const char *rel, size_t n,
                           ms_dashboard_file_t *out, ms_diag_t *diag);

//  The content type of a file name by its extension, from a fixed table
//  (html, js, mjs, css, json, map, svg, png, ico, txt, woff2); anything
//  else is "application/octet-stream". Static string.
const char *ms_dashboard_mime(const char *name);

//  The default dashboard directory of a daemon: the environment variable
//  MESHSWEEP_DASHBOARD_DIR when set and not empty, else build_dir when it
//  is a directory (the build tree's BUILD/dashboard, known at compile
//  time), else installed_dir. Borrowed (one of the three arguments or
//  the environment's string); never NULL when installed_dir is not.
const char *ms_dashboard_default_dir(const char *build_dir,
                                     const char *installed_dir);

#endif
