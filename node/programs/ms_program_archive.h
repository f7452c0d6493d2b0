/*  =========================================================================
    ms_program_archive - a program's directory as a reproducible .tar.gz,
    and the checks every node makes before it runs one

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The client packs the folder of a program sweep's spec (DESIGN.md
    "Program tasks") into one archive that travels as a content-addressed
    blob; its hash is part of the sweep's id, so the same folder must give
    the same bytes: entries in byte order of their paths, owner 0:0 with
    no names, mtime 0, modes 0644 or 0755 (the owner's execute bit kept)
    and 0755 for directories, gzip without a name or a time (libarchive).
    Left out: .git/, __pycache__/, *.pyc, and what .meshsweepignore (in
    the folder: one fnmatch(3) pattern per line, '#' comments, a trailing
    '/' for directories only, matched against the path from the folder and
    against the base name) excludes. A symbolic link, a device or a socket
    in the folder is an error (nothing follows a link out of the folder).

    A node checks an archive before it unpacks it in a sandbox (which
    unpacks it again with GNU tar, as the sandbox uid, into a tmpfs): only
    regular files and directories; relative names of at most 255 bytes
    with no "..", no empty component and no leading '/'; no setuid, setgid
    or sticky bit; at most max_entries entries and max_bytes bytes of file
    content in all.

    Thread rule: thread-safe (no shared state).
    =========================================================================
*/
#ifndef MS_PROGRAM_ARCHIVE_H
#define MS_PROGRAM_ARCHIVE_H

#include "ms_err.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

//  Default caps of a program archive (a spec may not raise them).
#define MS_PROGRAM_ARCHIVE_MAX_BYTES (64LL << 20)
#define MS_PROGRAM_ARCHIVE_MAX_ENTRIES 10000

//  Pack dir into a .tar.gz at out_path (replaced; written to a temporary
//  name and renamed). Returns MS_OK; MS_ERR_INVALID (diag: the path that
//  is a link or a special file, or the cap passed: "program folder: N
//  bytes, more than the limit of M"); MS_ERR_IO (diag: what could not be
//  read or written); MS_ERR_NOMEM.
int ms_program_archive_pack(const char *dir, const char *out_path,
                            int64_t max_bytes, int64_t max_entries,
                            ms_diag_t *diag);

//  Check the archive at path (see above). Returns MS_OK; MS_ERR_INVALID
//  (diag: "ENTRY" and why, or the cap passed); MS_ERR_IO (cannot read, or
//  not a gzip'd tar).
int ms_program_archive_check(const char *path, int64_t max_bytes,
                             int64_t max_entries, ms_diag_t *diag);

#ifdef __cplusplus
}
#endif

#endif
