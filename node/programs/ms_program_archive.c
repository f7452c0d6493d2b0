/*  =========================================================================
    ms_program_archive - a program's directory as a reproducible .tar.gz,
    and the checks every node makes before it runs one

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Packing walks the folder depth-first with each directory's names
    sorted (strcmp), which lists every path in byte order of its
    components, so two packs of one folder are the same bytes.
*/
#define _GNU_SOURCE
#include "ms_program_archive.h"

#include <archive.h>
#include <archive_entry.h>

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

//  Names never packed.
static const char *const s_always_out[] = {".git/", "__pycache__/", "*.pyc",
                                           ".meshsweep-data/"};

//  The patterns of .meshsweepignore.
typedef struct {
    char **pattern; // as written, without a trailing '/'
    bool *dir_only; // the pattern ended in '/'
    size_t n;
} s_ignore_t;

//  Packing state.
typedef struct {
    struct archive *ar;
    const char *root;
    s_ignore_t ignore;
    int64_t bytes, entries, max_bytes, max_entries;
    ms_diag_t *diag;
} s_pack_t;

static void
s_ignore_free(s_ignore_t *ig)
{
    for (size_t i = 0; i < ig->n; i++)
        free(ig->pattern[i]);
    free(ig->pattern);
    free(ig->dir_only);
    memset(ig, 0, sizeof *ig);
}

static int
s_ignore_add(s_ignore_t *ig, const char *line)
{
    size_t len = strlen(line);
    bool dir_only = len > 1 && line[len - 1] == '/';
    char **p = realloc(ig->pattern, (ig->n + 1) * sizeof *p);
    if (!p)
        return MS_ERR_NOMEM;
    ig->pattern = p;
    bool *d = realloc(ig->dir_only, (ig->n + 1) * sizeof *d);
    if (!d)
        return MS_ERR_NOMEM;
    ig->dir_only = d;
    if (!(ig->pattern[ig->n] = strndup(line, dir_only ? len - 1 : len)))
        return MS_ERR_NOMEM;
    ig->dir_only[ig->n++] = dir_only;
    return MS_OK;
}

//  Read DIR/.meshsweepignore (absent: no patterns) and the fixed ones.
static int
s_ignore_load(s_ignore_t *ig, const char *dir, ms_diag_t *diag)
{
    for (size_t i = 0; i < sizeof s_always_out / sizeof s_always_out[0]; i++)
        if (s_ignore_add(ig, s_always_out[i]) != MS_OK)
            return ms_diag_set_code(diag, MS_ERR_NOMEM, dir, "out of memory");
    char path[4096];
    snprintf(path, sizeof path, "%s/.meshsweepignore", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT
                   ? MS_OK
                   : ms_diag_set_code(diag, MS_ERR_IO, path, "cannot read: %s",
                                      strerror(errno));
    char line[1024];
    int rc = MS_OK;
    while (rc == MS_OK && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *p = line + strspn(line, " \t");
        if (!*p || *p == '#')
            continue;
        while (*p == '/')
            p++; // "/build" means build at the top: matched from the root
        if (*p && s_ignore_add(ig, p) != MS_OK)
            rc = ms_diag_set_code(diag, MS_ERR_NOMEM, path, "out of memory");
    }
    fclose(f);
    return rc;
}

//  Whether rel (the path from the folder) is left out.
static bool
s_ignored(const s_ignore_t *ig, const char *rel, bool is_dir)
{
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    for (size_t i = 0; i < ig->n; i++) {
        if (ig->dir_only[i] && !is_dir)
            continue;
        if (fnmatch(ig->pattern[i], rel, FNM_PATHNAME) == 0 ||
            fnmatch(ig->pattern[i], base, 0) == 0)
            return true;
    }
    return false;
}

static int
s_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}

//  Write one entry's header (mode, size, fixed owner and time).
static int
s_header(s_pack_t *pk, const char *rel, mode_t type, mode_t perm, int64_t size)
{
    struct archive_entry *e = archive_entry_new();
    if (!e)
        return ms_diag_set_code(pk->diag, MS_ERR_NOMEM, rel, "out of memory");
    archive_entry_set_pathname(e, rel);
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, perm);
    archive_entry_set_size(e, size);
    archive_entry_set_uid(e, 0);
    archive_entry_set_gid(e, 0);
    archive_entry_set_mtime(e, 0, 0);
    int r = archive_write_header(pk->ar, e);
    archive_entry_free(e);
    if (r != ARCHIVE_OK)
        return ms_diag_set_code(pk->diag, MS_ERR_IO, rel, "%s",
                                archive_error_string(pk->ar));
    return MS_OK;
}

//  Pack the directory rel (relative to the root; "" for the root).
static int
s_pack_dir(s_pack_t *pk, const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", pk->root, *rel ? "/" : "", rel);
    DIR *d = opendir(path);
    if (!d)
        return ms_diag_set_code(pk->diag, MS_ERR_IO, path, "cannot read: %s",
                                strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    int rc = MS_OK;
    while (rc == MS_OK && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            char **grown = realloc(names, cap * sizeof *grown);
            if (!grown) {
                rc = ms_diag_set_code(pk->diag, MS_ERR_NOMEM, path,
                                      "out of memory");
                break;
            }
            names = grown;
        }
        if (!(names[n] = strdup(de->d_name)))
            rc =
                ms_diag_set_code(pk->diag, MS_ERR_NOMEM, path, "out of memory");
        else
            n++;
    }
    closedir(d);
    if (rc == MS_OK && n)
        qsort(names, n, sizeof *names, s_cmp);
    for (size_t i = 0; rc == MS_OK && i < n; i++) {
        char sub[4096], full[8200];
        int len =
            snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", names[i]);
        if (len < 0 || (size_t) len >= sizeof sub) {
            rc = ms_diag_set(pk->diag, rel, "a path of more than 4095 bytes");
            break;
        }
        snprintf(full, sizeof full, "%s/%s", pk->root, sub);
        struct stat st;
        if (lstat(full, &st) != 0) {
            rc = ms_diag_set_code(pk->diag, MS_ERR_IO, full, "%s",
                                  strerror(errno));
            break;
        }
        bool is_dir = S_ISDIR(st.st_mode);
        if (s_ignored(&pk->ignore, sub, is_dir))
            continue;
        if (!is_dir && !S_ISREG(st.st_mode)) {
            rc = ms_diag_set(pk->diag, full,
                             "is a %s: a program folder holds files and "
                             "folders only (leave it out with "
                             ".meshsweepignore)",
                             S_ISLNK(st.st_mode) ? "symbolic link"
                                                 : "special file");
            break;
        }
        if (++pk->entries > pk->max_entries) {
            rc = ms_diag_set(pk->diag, "program folder",
                             "more than %lld files and folders (leave some "
                             "out with .meshsweepignore)",
                             (long long) pk->max_entries);
            break;
        }
        if (is_dir) {
            rc = s_header(pk, sub, AE_IFDIR, 0755, 0);
            if (rc == MS_OK)
                rc = s_pack_dir(pk, sub);
            continue;
        }
        pk->bytes += st.st_size;
        if (pk->bytes > pk->max_bytes) {
            rc = ms_diag_set(pk->diag, "program folder",
                             "%lld bytes or more, more than the limit of "
                             "%lld (at %s; leave data and outputs out with "
                             ".meshsweepignore)",
                             (long long) pk->bytes, (long long) pk->max_bytes,
                             sub);
            break;
        }
        rc = s_header(pk, sub, AE_IFREG, (st.st_mode & S_IXUSR) ? 0755 : 0644,
                      st.st_size);
        int fd = rc == MS_OK ? open(full, O_RDONLY | O_CLOEXEC) : -1;
        if (rc == MS_OK && fd < 0)
            rc = ms_diag_set_code(pk->diag, MS_ERR_IO, full, "cannot read: %s",
                                  strerror(errno));
        char buf[65536];
        int64_t left = st.st_size;
        while (rc == MS_OK && left > 0) {
            ssize_t got = read(fd, buf, sizeof buf);
            if (got <= 0) {
                rc = ms_diag_set_code(pk->diag, MS_ERR_IO, full,
                                      "changed while it was packed");
                break;
            }
            if (got > left)
                got = (ssize_t) left;
            if (archive_write_data(pk->ar, buf, (size_t) got) != got)
                rc = ms_diag_set_code(pk->diag, MS_ERR_IO, full, "%s",
                                      archive_error_string(pk->ar));
            left -= got;
        }
        if (fd >= 0)
            close(fd);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

//  --------------------------------------------------------------------------
//  Pack a folder

int
ms_program_archive_pack(const char *dir, const char *out_path,
                        int64_t max_bytes, int64_t max_entries, ms_diag_t *diag)
{
    assert(dir && out_path);
    s_pack_t pk = {.root = dir,
                   .max_bytes = max_bytes,
                   .max_entries = max_entries,
                   .diag = diag};
    int rc = s_ignore_load(&pk.ignore, dir, diag);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out_path, (long) getpid());
    if (rc == MS_OK) {
        pk.ar = archive_write_new();
        if (!pk.ar)
            rc =
                ms_diag_set_code(diag, MS_ERR_NOMEM, out_path, "out of memory");
    }
    if (rc == MS_OK &&
        (archive_write_set_format_pax_restricted(pk.ar) != ARCHIVE_OK ||
         archive_write_add_filter_gzip(pk.ar) != ARCHIVE_OK ||
         archive_write_set_filter_option(pk.ar, "gzip", "timestamp", NULL) !=
             ARCHIVE_OK ||
         archive_write_open_filename(pk.ar, tmp) != ARCHIVE_OK))
        rc = ms_diag_set_code(diag, MS_ERR_IO, out_path, "%s",
                              archive_error_string(pk.ar));
    if (rc == MS_OK)
        rc = s_pack_dir(&pk, "");
    if (pk.ar) {
        if (archive_write_close(pk.ar) != ARCHIVE_OK && rc == MS_OK)
            rc = ms_diag_set_code(diag, MS_ERR_IO, out_path, "%s",
                                  archive_error_string(pk.ar));
        archive_write_free(pk.ar);
    }
    s_ignore_free(&pk.ignore);
    if (rc == MS_OK && rename(tmp, out_path) != 0)
        rc = ms_diag_set_code(diag, MS_ERR_IO, out_path, "%s", strerror(errno));
    if (rc != MS_OK)
        unlink(tmp);
    return rc;
}

//  --------------------------------------------------------------------------
//  Why an entry's name is refused, or NULL.

static const char *
s_bad_name(const char *name)
{
    if (!name || !*name)
        return "has no name";
    if (strlen(name) > 255)
        return "has a name of more than 255 bytes";
    if (name[0] == '/')
        return "has an absolute name";
    const char *p = name;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t) (slash - p) : strlen(p);
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return "has a '..' component";
        if (len == 0 && slash && slash[1])
            return "has an empty component";
        if (!slash)
            break;
        p = slash + 1;
    }
    return NULL;
}

//  --------------------------------------------------------------------------
//  Check an archive

int
ms_program_archive_check(const char *path, int64_t max_bytes,
                         int64_t max_entries, ms_diag_t *diag)
{
    assert(path);
    struct archive *ar = archive_read_new();
    if (!ar)
        return ms_diag_set_code(diag, MS_ERR_NOMEM, path, "out of memory");
    archive_read_support_filter_gzip(ar);
    archive_read_support_format_tar(ar);
    int rc = MS_OK;
    if (archive_read_open_filename(ar, path, 65536) != ARCHIVE_OK)
        rc = ms_diag_set_code(diag, MS_ERR_IO, path, "%s",
                              archive_error_string(ar));
    int64_t bytes = 0, entries = 0;
    struct archive_entry *e;
    while (rc == MS_OK) {
        int r = archive_read_next_header(ar, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK) {
            rc = ms_diag_set_code(diag, MS_ERR_IO, path,
                                  "not a program archive (.tar.gz): %s",
                                  archive_error_string(ar));
            break;
        }
        const char *name = archive_entry_pathname(e);
        const char *why = s_bad_name(name);
        mode_t type = archive_entry_filetype(e);
        mode_t mode = archive_entry_mode(e);
        char where[300];
        snprintf(where, sizeof where, "%s: %.255s", path, name ? name : "");
        if (!why && type != AE_IFREG && type != AE_IFDIR)
            why = type == AE_IFLNK            ? "is a symbolic link"
                  : archive_entry_hardlink(e) ? "is a hard link"
                                              : "is a special file";
        if (!why && archive_entry_hardlink(e))
            why = "is a hard link";
        if (!why && (mode & (S_ISUID | S_ISGID | S_ISVTX)))
            why = "has a setuid, setgid or sticky bit";
        if (why) {
            rc = ms_diag_set(diag, where,
                             "%s: the program archive is "
                             "refused",
                             why);
            break;
        }
        if (++entries > max_entries) {
            rc = ms_diag_set(diag, path, "more than %lld entries",
                             (long long) max_entries);
            break;
        }
        bytes += archive_entry_size(e);
        if (bytes > max_bytes) {
            rc = ms_diag_set(diag, path,
                             "more than %lld bytes of files (the limit)",
                             (long long) max_bytes);
            break;
        }
    }
    archive_read_free(ar);
    return rc;
}
