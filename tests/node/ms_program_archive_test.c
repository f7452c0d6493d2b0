/*  =========================================================================
    ms_program_archive_test - a program folder packed reproducibly (order,
    owner, time, modes, ignores), refused when it holds links or passes a
    cap; hostile archives refused by the node's check; a packed program
    unpacked and run in the sandbox

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_program_archive.h"
#include "ms_sandbox.h"
#include "ms_test_fs.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

typedef struct {
    char dir[64];  // temporary dir
    char src[96];  // dir/src: the program folder
    char out[96];  // dir/p.tar.gz
    char out2[96]; // dir/q.tar.gz
} s_fix_t;

static void
s_file(const char *dir, const char *rel, const char *text, mode_t mode)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static int
setup(void **state)
{
    s_fix_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/ms-progarch-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->src, sizeof f->src, "%s/src", f->dir);
    snprintf(f->out, sizeof f->out, "%s/p.tar.gz", f->dir);
    snprintf(f->out2, sizeof f->out2, "%s/q.tar.gz", f->dir);
    mkdir(f->src, 0755);
    s_file(f->src, "train.py", "print('hi')\n", 0755);
    s_file(f->src, "data/x.csv", "a,b\n1,2\n", 0600);
    s_file(f->src, "sub/deep/f.txt", "deep\n", 0644);
    s_file(f->src, ".git/HEAD", "ref\n", 0644);
    s_file(f->src, "__pycache__/m.cpython-311.pyc", "x", 0644);
    s_file(f->src, "outputs/big.bin", "0123456789", 0644);
    s_file(f->src, "run.log", "log\n", 0644);
    s_file(f->src, ".meshsweepignore", "# results\noutputs/\n*.log\n", 0644);
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    s_fix_t *f = *state;
    ms_tf_rm_rf(f->dir);
    free(f);
    return 0;
}

//  The entries of an archive as "NAME MODE UID MTIME;..."
static char *
s_list(const char *path)
{
    static char out[4096];
    out[0] = '\0';
    struct archive *ar = archive_read_new();
    archive_read_support_filter_gzip(ar);
    archive_read_support_format_tar(ar);
    assert_int_equal(archive_read_open_filename(ar, path, 65536), ARCHIVE_OK);
    struct archive_entry *e;
    while (archive_read_next_header(ar, &e) == ARCHIVE_OK) {
        char line[400];
        snprintf(line, sizeof line, "%s %o %ld %ld;", archive_entry_pathname(e),
                 (unsigned) archive_entry_mode(e) & 07777,
                 (long) archive_entry_uid(e), (long) archive_entry_mtime(e));
        strcat(out, line);
    }
    archive_read_free(ar);
    return out;
}

static bool
s_same_bytes(const char *a, const char *b)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", a, b);
    return system(cmd) == 0;
}

//  --------------------------------------------------------------------------
static void
test_pack_reproducible(void **state)
{
    s_fix_t *f = *state;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(
        ms_program_archive_pack(f->src, f->out, MS_PROGRAM_ARCHIVE_MAX_BYTES,
                                MS_PROGRAM_ARCHIVE_MAX_ENTRIES, &diag),
        MS_OK);
    assert_string_equal(s_list(f->out), ".meshsweepignore 644 0 0;"
                                        "data/ 755 0 0;"
                                        "data/x.csv 644 0 0;"
                                        "sub/ 755 0 0;"
                                        "sub/deep/ 755 0 0;"
                                        "sub/deep/f.txt 644 0 0;"
                                        "train.py 755 0 0;");
    //  Touching a file changes nothing; a new byte changes the archive.
    sleep(1);
    char path[256];
    snprintf(path, sizeof path, "%s/train.py", f->src);
    assert_int_equal(utimes(path, NULL), 0);
    assert_int_equal(
        ms_program_archive_pack(f->src, f->out2, MS_PROGRAM_ARCHIVE_MAX_BYTES,
                                MS_PROGRAM_ARCHIVE_MAX_ENTRIES, &diag),
        MS_OK);
    assert_true(s_same_bytes(f->out, f->out2));
    s_file(f->src, "train.py", "print('hi!')\n", 0755);
    assert_int_equal(
        ms_program_archive_pack(f->src, f->out2, MS_PROGRAM_ARCHIVE_MAX_BYTES,
                                MS_PROGRAM_ARCHIVE_MAX_ENTRIES, &diag),
        MS_OK);
    assert_false(s_same_bytes(f->out, f->out2));
    assert_int_equal(ms_program_archive_check(f->out, 1 << 20, 100, &diag),
                     MS_OK);
}

//  --------------------------------------------------------------------------
static void
test_pack_refuses(void **state)
{
    s_fix_t *f = *state;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    //  Caps.
    assert_int_equal(ms_program_archive_pack(f->src, f->out, 10, 100, &diag),
                     MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "more than the limit of 10"));
    assert_int_equal(ms_program_archive_pack(f->src, f->out, 1 << 20, 3, &diag),
                     MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "more than 3 files and folders"));
    //  A link out of the folder.
    char link[256];
    snprintf(link, sizeof link, "%s/etc-passwd", f->src);
    assert_int_equal(symlink("/etc/passwd", link), 0);
    assert_int_equal(
        ms_program_archive_pack(f->src, f->out, 1 << 20, 100, &diag),
        MS_ERR_INVALID);
    assert_non_null(strstr(diag.where, "etc-passwd"));
    assert_non_null(strstr(diag.reason, "symbolic link"));
    assert_int_not_equal(access(f->out, F_OK), 0); // nothing left behind
}

//  Write a one-entry hostile archive at path.
static void
s_hostile(const char *path, const char *name, mode_t type, mode_t perm,
          const char *link_to)
{
    struct archive *ar = archive_write_new();
    archive_write_set_format_pax_restricted(ar);
    archive_write_add_filter_gzip(ar);
    assert_int_equal(archive_write_open_filename(ar, path), ARCHIVE_OK);
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, perm);
    if (type == AE_IFLNK)
        archive_entry_set_symlink(e, link_to);
    if (type == AE_IFCHR)
        archive_entry_set_rdev(e, 0x0103);
    if (link_to && type == AE_IFREG)
        archive_entry_set_hardlink(e, link_to);
    archive_entry_set_size(e, type == AE_IFREG && !link_to ? 2 : 0);
    assert_int_equal(archive_write_header(ar, e), ARCHIVE_OK);
    if (type == AE_IFREG && !link_to)
        archive_write_data(ar, "x\n", 2);
    archive_entry_free(e);
    archive_write_close(ar);
    archive_write_free(ar);
}

//  --------------------------------------------------------------------------
static void
test_check_refuses_hostile_archives(void **state)
{
    s_fix_t *f = *state;
    ms_diag_t diag;
    struct {
        const char *name;
        mode_t type, perm;
        const char *link;
        const char *why;
    } cases[] = {
        {"../escape.py", AE_IFREG, 0644, NULL, "'..' component"},
        {"a/../../b", AE_IFREG, 0644, NULL, "'..' component"},
        {"/etc/cron.d/x", AE_IFREG, 0644, NULL, "absolute name"},
        {"passwd", AE_IFLNK, 0777, "/etc/passwd", "symbolic link"},
        {"hard", AE_IFREG, 0644, "/etc/shadow", "hard link"},
        {"null", AE_IFCHR, 0666, NULL, "special file"},
        {"suid.sh", AE_IFREG, 04755, NULL, "setuid"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s_hostile(f->out, cases[i].name, cases[i].type, cases[i].perm,
                  cases[i].link);
        ms_diag_clear(&diag);
        int rc = ms_program_archive_check(f->out, 1 << 20, 100, &diag);
        if (rc != MS_ERR_INVALID || !strstr(diag.reason, cases[i].why))
            fail_msg("%s: rc %d, %s: %s", cases[i].name, rc, diag.where,
                     diag.reason);
    }
    //  Caps, and what is not an archive at all.
    s_hostile(f->out, "ok.txt", AE_IFREG, 0644, NULL);
    assert_int_equal(ms_program_archive_check(f->out, 1, 100, &diag),
                     MS_ERR_INVALID);
    assert_int_equal(ms_program_archive_check(f->out, 100, 0, &diag),
                     MS_ERR_INVALID);
    s_file(f->dir, "not.tar.gz", "plain text, not gzip\n", 0644);
    char path[256];
    snprintf(path, sizeof path, "%s/not.tar.gz", f->dir);
    assert_int_equal(ms_program_archive_check(path, 100, 100, &diag),
                     MS_ERR_IO);
}

//  --------------------------------------------------------------------------
//  Packed here, unpacked in the sandbox: the files, modes and ignores hold.
static void
test_runs_in_the_sandbox(void **state)
{
    s_fix_t *f = *state;
    char why[300];
    if (ms_sandbox_probe(NULL, why, sizeof why) != MS_OK)
        skip();
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(
        ms_program_archive_pack(f->src, f->out, 1 << 20, 100, &diag), MS_OK);
    ms_sandbox_policy_t p;
    ms_sandbox_policy_defaults(&p);
    p.timeout_s = 60;
    p.program_archive = f->out;
    const char *argv[] = {"/bin/sh", "-c",
                          "test -x train.py && cat data/x.csv sub/deep/f.txt "
                          "&& ! test -e outputs && ! test -e run.log && "
                          "/usr/bin/python3 train.py",
                          NULL};
    p.argv = argv;
    ms_sandbox_result_t r;
    assert_int_equal(ms_sandbox_run(&p, NULL, NULL, &r, &diag), MS_OK);
    if (!r.exited || r.exit_code != 0)
        fail_msg("exit %d: %s", r.exit_code, r.stderr_tail);
    assert_string_equal(r.stdout_tail, "a,b\n1,2\ndeep\nhi\n");
    ms_sandbox_result_clear(&r);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pack_reproducible, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pack_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_refuses_hostile_archives,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_runs_in_the_sandbox, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
