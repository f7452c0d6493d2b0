/*  =========================================================================
    ms_dataset_test - IDX and CSV loaders, their errors, built-in names,
    scaling and the validation split

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Tiny IDX (raw and gzip) and CSV files are written into a fresh mkdtemp
    folder; every error case checks the code, that diag.where names the
    exact file (or "PATH:LINE" for CSV) and what the reason says. One case
    loads the real Fashion-MNIST from Debian's dataset-fashion-mnist when
    it is installed, and skips with a message when not.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "ms_dataset.h"

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

static char s_dir[256];     // temp folder of this run
static char s_path[4][512]; // scratch paths

//  --------------------------------------------------------------------------
//  Path of a file in the temp folder (into one of four scratch slots).

static const char *
s_tmp(int slot, const char *name)
{
    snprintf(s_path[slot], sizeof s_path[slot], "%s/%s", s_dir, name);
    return s_path[slot];
}

//  --------------------------------------------------------------------------
//  Write bytes to a file, raw or gzip-compressed.

static void
s_write(const char *path, const void *data, size_t len, bool gzip)
{
    if (gzip) {
        gzFile gz = gzopen(path, "wb9");
        assert_non_null(gz);
        if (len)
            assert_int_equal(gzwrite(gz, data, (unsigned) len), (int) len);
        assert_int_equal(gzclose(gz), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        if (len)
            assert_int_equal(fwrite(data, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
    }
}

//  --------------------------------------------------------------------------
//  Write a text file.

static void
s_write_text(const char *path, const char *text)
{
    s_write(path, text, strlen(text), false);
}

//  --------------------------------------------------------------------------
//  Build an IDX byte image: type, dims, sizes, then payload; returns length.

static size_t
s_idx_bytes(unsigned char *buf, int type, int n_dims, const uint32_t *sizes,
            const unsigned char *payload, size_t payload_len)
{
    buf[0] = 0;
    buf[1] = 0;
    buf[2] = (unsigned char) type;
    buf[3] = (unsigned char) n_dims;
    size_t at = 4;
    for (int i = 0; i < n_dims; i++) {
        buf[at++] = (unsigned char) (sizes[i] >> 24);
        buf[at++] = (unsigned char) (sizes[i] >> 16);
        buf[at++] = (unsigned char) (sizes[i] >> 8);
        buf[at++] = (unsigned char) sizes[i];
    }
    if (payload_len)
        memcpy(buf + at, payload, payload_len);
    return at + payload_len;
}

//  Three 2x2 images and their labels, used by most IDX cases.
static const unsigned char s_pixels[12] = {0, 255, 128, 1,  2,  3,
                                           4, 5,   250, 10, 20, 30};
static const unsigned char s_labels[3] = {0, 2, 1};

//  --------------------------------------------------------------------------
//  Write the standard images/labels pair under the given names.

static void
s_write_pair(const char *images, const char *labels, bool gzip)
{
    unsigned char buf[64];
    uint32_t idims[3] = {3, 2, 2};
    uint32_t ldims[1] = {3};
    s_write(images, buf, s_idx_bytes(buf, 8, 3, idims, s_pixels, 12), gzip);
    s_write(labels, buf, s_idx_bytes(buf, 8, 1, ldims, s_labels, 3), gzip);
}

//  --------------------------------------------------------------------------
//  Expect a load of (images, labels) to fail with code, where, reason part.

static void
s_expect_idx_error(const char *images, const char *labels, int code,
                   const char *where, const char *reason_part)
{
    ms_dataset_t *d = (ms_dataset_t *) 0x1;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_dataset_load_idx(&d, images, labels, &diag);
    if (rc != code || strcmp(diag.where, where) != 0 ||
        !strstr(diag.reason, reason_part))
        print_error("got rc %d, where \"%s\", reason \"%s\"\n", rc, diag.where,
                    diag.reason);
    assert_int_equal(rc, code);
    assert_null(d);
    assert_string_equal(diag.where, where);
    assert_non_null(strstr(diag.reason, reason_part));
}

//  --------------------------------------------------------------------------
//  Create the temp folder.

static int
s_setup(void **state)
{
    (void) state;
    snprintf(s_dir, sizeof s_dir, "%s/ms_dataset_test.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(s_dir) ? 0 : -1;
}

//  --------------------------------------------------------------------------
//  Remove the temp folder and what is in it.

static int
s_teardown(void **state)
{
    (void) state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    return system(cmd) == 0 ? 0 : -1;
}

//  --------------------------------------------------------------------------
//  Check a dataset holds the standard three images.

static void
s_check_standard(const ms_dataset_t *d)
{
    assert_int_equal(d->n_samples, 3);
    assert_int_equal(d->n_features, 4);
    assert_int_equal(d->n_classes, 3);
    assert_null(d->targets);
    for (int i = 0; i < 12; i++)
        assert_true(d->x[i] == (float) s_pixels[i]);
    for (int i = 0; i < 3; i++)
        assert_int_equal(d->labels[i], s_labels[i]);
    assert_int_equal(ms_dataset_bytes(d), 12 * 4 + 3 * 4);
}

static void
test_idx_raw_loads(void **state)
{
    (void) state;
    s_write_pair(s_tmp(0, "raw-images"), s_tmp(1, "raw-labels"), false);
    ms_dataset_t *d = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_dataset_load_idx(&d, s_path[0], s_path[1], &diag),
                     MS_OK);
    s_check_standard(d);
    ms_dataset_destroy(&d);
    assert_null(d);
    ms_dataset_destroy(&d); // NULL-safe
}

static void
test_idx_gzip_loads(void **state)
{
    (void) state;
    s_write_pair(s_tmp(0, "gz-images.gz"), s_tmp(1, "gz-labels.gz"), true);
    ms_dataset_t *d = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_dataset_load_idx(&d, s_path[0], s_path[1], &diag),
                     MS_OK);
    s_check_standard(d);
    ms_dataset_destroy(&d);
    //  A gzip image file with a raw label file is fine too.
    s_write_pair(s_tmp(2, "mix-images"), s_tmp(3, "mix-labels"), false);
    assert_int_equal(ms_dataset_load_idx(&d, s_path[0], s_path[3], &diag),
                     MS_OK);
    s_check_standard(d);
    ms_dataset_destroy(&d);
}

static void
test_idx_missing_file(void **state)
{
    (void) state;
    s_write_pair(s_tmp(0, "m-images"), s_tmp(1, "m-labels"), false);
    s_expect_idx_error(s_tmp(2, "no-such-images"), s_path[1], MS_ERR_IO,
                       s_path[2], "No such file");
    s_expect_idx_error(s_path[0], s_tmp(3, "no-such-labels"), MS_ERR_IO,
                       s_path[3], "No such file");
    s_expect_idx_error(s_dir, s_path[1], MS_ERR_IO, s_dir, "directory");
}

static void
test_idx_bad_magic(void **state)
{
    (void) state;
    s_write_pair(s_tmp(0, "bm-images"), s_tmp(1, "bm-labels"), false);
    s_write_text(s_tmp(2, "bm-text"), "label,a\n1,2\n");
    s_expect_idx_error(s_path[2], s_path[1], MS_ERR_DATASET, s_path[2],
                       "bad magic number 0x6c616265");
    s_write_text(s_tmp(3, "bm-short"), "\0");
    s_expect_idx_error(s_path[0], s_path[3], MS_ERR_DATASET, s_path[3],
                       "truncated header");
}

static void
test_idx_wrong_type(void **state)
{
    (void) state;
    unsigned char buf[128];
    uint32_t idims[3] = {3, 2, 2};
    float payload[12] = {0};
    s_write(s_tmp(0, "wt-images"), buf,
            s_idx_bytes(buf, 0x0D, 3, idims, (unsigned char *) payload, 48),
            false);
    s_write_pair(s_tmp(2, "wt-good-images"), s_tmp(1, "wt-labels"), false);
    s_expect_idx_error(s_path[0], s_path[1], MS_ERR_DATASET, s_path[0],
                       "IDX data type 0x0d (float32) is not supported");
}

static void
test_idx_mislabelled_files(void **state)
{
    (void) state;
    s_write_pair(s_tmp(0, "sw-images"), s_tmp(1, "sw-labels"), false);
    //  Image and label files given the wrong way round.
    s_expect_idx_error(s_path[1], s_path[0], MS_ERR_DATASET, s_path[1],
                       "has 1 dimension, expected 3 for an image file (is "
                       "this a label file?)");
    //  Two image files.
    s_expect_idx_error(s_path[0], s_path[0], MS_ERR_DATASET, s_path[0],
                       "has 3 dimensions, expected 1 for a label file");
    //  A zero dimension.
    unsigned char buf[64];
    uint32_t idims[3] = {3, 0, 2};
    s_write(s_tmp(2, "sw-zero"), buf, s_idx_bytes(buf, 8, 3, idims, NULL, 0),
            false);
    s_expect_idx_error(s_path[2], s_path[1], MS_ERR_DATASET, s_path[2],
                       "dimension 1 is 0");
}

static void
test_idx_truncated(void **state)
{
    (void) state;
    unsigned char buf[64];
    uint32_t idims[3] = {3, 2, 2};
    s_write_pair(s_tmp(3, "tr-good-images"), s_tmp(1, "tr-labels"), false);
    for (int gz = 0; gz < 2; gz++) {
        //  A header promising 12 pixels and 5 that arrive.
        s_write(s_tmp(0, gz ? "tr-images.gz" : "tr-images"), buf,
                s_idx_bytes(buf, 8, 3, idims, s_pixels, 5), gz);
        s_expect_idx_error(s_path[0], s_path[1], MS_ERR_DATASET, s_path[0],
                           "truncated: expected 12 bytes of pixels, got 5");
    }
    //  A label file that stops early.
    uint32_t ldims[1] = {3};
    s_write(s_tmp(2, "tr-labels-short"), buf,
            s_idx_bytes(buf, 8, 1, ldims, s_labels, 2), false);
    s_expect_idx_error(s_path[3], s_path[2], MS_ERR_DATASET, s_path[2],
                       "truncated: expected 3 bytes of labels, got 2");
    //  A gzip file cut in the middle of its compressed stream.
    unsigned char big[16 + 4000];
    unsigned char pix[4000];
    uint32_t lcg = 12345;
    for (int i = 0; i < 4000; i++) {
        lcg = lcg * 1664525u + 1013904223u;
        pix[i] = (unsigned char) (lcg >> 24);
    }
    uint32_t bdims[3] = {1000, 2, 2};
    size_t len = s_idx_bytes(big, 8, 3, bdims, pix, 4000);
    s_write(s_tmp(0, "tr-cut.gz"), big, len, true);
    struct stat st;
    assert_int_equal(stat(s_path[0], &st), 0);
    assert_int_equal(truncate(s_path[0], st.st_size / 2), 0);
    uint32_t l1000[1] = {1000};
    unsigned char lab[1000] = {0};
    s_write(s_tmp(2, "tr-l1000"), big, s_idx_bytes(big, 8, 1, l1000, lab, 1000),
            false);
    s_expect_idx_error(s_path[0], s_path[2], MS_ERR_DATASET, s_path[0],
                       "truncated gzip stream: expected 4000 bytes of "
                       "pixels, got");
}

static void
test_idx_count_mismatch(void **state)
{
    (void) state;
    unsigned char buf[64];
    s_write_pair(s_tmp(0, "cm-images"), s_tmp(3, "cm-unused"), false);
    uint32_t ldims[1] = {2};
    s_write(s_tmp(1, "cm-labels"), buf,
            s_idx_bytes(buf, 8, 1, ldims, s_labels, 2), false);
    char reason[600];
    snprintf(reason, sizeof reason,
             "holds 2 labels but the image file %s holds 3 images", s_path[0]);
    s_expect_idx_error(s_path[0], s_path[1], MS_ERR_DATASET, s_path[1], reason);
}

static void
test_idx_corrupt_gzip(void **state)
{
    (void) state;
    s_write_pair(s_tmp(0, "cg-images.gz"), s_tmp(1, "cg-labels.gz"), true);
    //  Flip a bit of the CRC-32 in the gzip trailer: every byte inflates,
    //  and the damage shows only at the end of the member.
    FILE *f = fopen(s_path[0], "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, -8, SEEK_END), 0);
    int byte = fgetc(f);
    assert_int_equal(fseek(f, -8, SEEK_END), 0);
    fputc(byte ^ 0x40, f);
    assert_int_equal(fclose(f), 0);
    s_expect_idx_error(s_path[0], s_path[1], MS_ERR_DATASET, s_path[0],
                       "corrupt gzip stream");
    //  A gzip member whose first deflate block has the reserved type.
    unsigned char junk[16] = {0x1f, 0x8b, 0x08, 0,    0,    0,    0,    0,
                              0,    0x03, 0x07, 0x55, 0x55, 0x55, 0x55, 0x55};
    s_write(s_tmp(2, "cg-junk.gz"), junk, sizeof junk, false);
    s_expect_idx_error(s_path[2], s_path[1], MS_ERR_DATASET, s_path[2],
                       "corrupt gzip stream after 0 uncompressed bytes: "
                       "invalid block type");
}

static void
test_idx_trailing_garbage(void **state)
{
    (void) state;
    unsigned char buf[64];
    uint32_t idims[3] = {3, 2, 2};
    unsigned char more[15];
    memcpy(more, s_pixels, 12);
    memset(more + 12, 0xAA, 3);
    s_write_pair(s_tmp(3, "tg-good"), s_tmp(1, "tg-labels"), false);
    s_write(s_tmp(0, "tg-images"), buf, s_idx_bytes(buf, 8, 3, idims, more, 15),
            false);
    s_expect_idx_error(s_path[0], s_path[1], MS_ERR_DATASET, s_path[0],
                       "trailing garbage: 3 bytes after the expected 12 "
                       "bytes of pixels");
    s_write(s_tmp(0, "tg-images.gz"), buf,
            s_idx_bytes(buf, 8, 3, idims, more, 15), true);
    s_expect_idx_error(s_path[0], s_path[1], MS_ERR_DATASET, s_path[0],
                       "trailing garbage: 3 bytes after the last image");
}

static void
test_idx_label_out_of_range(void **state)
{
    (void) state;
    unsigned char buf[64];
    uint32_t ldims[1] = {3};
    unsigned char bad[3] = {0, 255, 1};
    s_write_pair(s_tmp(0, "lr-images"), s_tmp(3, "lr-unused"), false);
    s_write(s_tmp(1, "lr-labels"), buf, s_idx_bytes(buf, 8, 1, ldims, bad, 3),
            false);
    s_expect_idx_error(s_path[0], s_path[1], MS_ERR_DATASET, s_path[1],
                       "label 255 of record 1 is out of range");
}

//  --------------------------------------------------------------------------
//  Make DIR/NAME/ hold a tiny built-in dataset whose labels are given.

static void
s_fake_builtin(const char *name, const unsigned char *train_labels)
{
    char dir[400], p[4][512];
    snprintf(dir, sizeof dir, "%s/builtin-%s", s_dir, name);
    mkdir(dir, 0700);
    snprintf(dir, sizeof dir, "%s/builtin-%s/%s", s_dir, name, name);
    mkdir(dir, 0700);
    snprintf(p[0], sizeof p[0], "%s/train-images-idx3-ubyte.gz", dir);
    snprintf(p[1], sizeof p[1], "%s/train-labels-idx1-ubyte.gz", dir);
    snprintf(p[2], sizeof p[2], "%s/t10k-images-idx3-ubyte", dir);
    snprintf(p[3], sizeof p[3], "%s/t10k-labels-idx1-ubyte", dir);
    s_write_pair(p[2], p[3], false);
    unsigned char buf[64];
    uint32_t idims[3] = {3, 2, 2};
    uint32_t ldims[1] = {3};
    s_write(p[0], buf, s_idx_bytes(buf, 8, 3, idims, s_pixels, 12), true);
    s_write(p[1], buf, s_idx_bytes(buf, 8, 1, ldims, train_labels, 3), true);
    snprintf(dir, sizeof dir, "%s/builtin-%s", s_dir, name);
    setenv("MESHSWEEP_DATASETS_DIR", dir, 1);
}

static void
test_builtin_from_env_dir(void **state)
{
    (void) state;
    unsigned char labels[3] = {9, 0, 3};
    s_fake_builtin("fashion-mnist", labels);
    char *ti = NULL, *tl = NULL, *si = NULL, *sl = NULL;
    ms_diag_t diag;
    assert_int_equal(
        ms_dataset_builtin_paths("fashion-mnist", &ti, &tl, &si, &sl, &diag),
        MS_OK);
    assert_non_null(strstr(ti, "builtin-fashion-mnist/fashion-mnist/"
                               "train-images-idx3-ubyte.gz"));
    assert_non_null(strstr(sl, "t10k-labels-idx1-ubyte"));
    free(ti);
    free(tl);
    free(si);
    free(sl);
    ms_dataset_t *train = NULL, *test = NULL;
    assert_int_equal(
        ms_dataset_load_builtin("fashion-mnist", &train, &test, &diag), MS_OK);
    assert_int_equal(train->n_samples, 3);
    assert_int_equal(train->n_classes, 10);
    assert_int_equal(test->n_classes, 10); // test labels only reach 2
    assert_int_equal(train->labels[0], 9);
    ms_dataset_destroy(&train);
    ms_dataset_destroy(&test);
    unsetenv("MESHSWEEP_DATASETS_DIR");
}

static void
test_builtin_label_out_of_range(void **state)
{
    (void) state;
    unsigned char labels[3] = {9, 10, 3};
    s_fake_builtin("mnist", labels);
    ms_dataset_t *train = NULL, *test = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_dataset_load_builtin("mnist", &train, &test, &diag),
                     MS_ERR_DATASET);
    assert_null(train);
    assert_null(test);
    assert_non_null(strstr(diag.where, "/mnist/train-labels-idx1-ubyte.gz"));
    assert_string_equal(diag.reason, "sample 1: label 10 out of range [0, 10)");
    unsetenv("MESHSWEEP_DATASETS_DIR");
}

static void
test_builtin_missing_and_unknown(void **state)
{
    (void) state;
    setenv("MESHSWEEP_DATASETS_DIR", s_dir, 1);
    ms_dataset_t *train = NULL, *test = NULL;
    ms_diag_t diag;
    char text[1200];
    struct stat st;
    if (stat("/usr/share/datasets/mnist", &st) != 0) {
        assert_int_equal(ms_dataset_load_builtin("mnist", &train, &test, &diag),
                         MS_ERR_NOTFOUND);
        ms_diag_format(&diag, text, sizeof text);
        assert_non_null(strstr(text, "dataset \"mnist\" not found in"));
        assert_non_null(strstr(text, "/usr/share/datasets/mnist"));
        assert_non_null(strstr(text, "Debian has no package"));
    }
    if (stat(FMNIST_DIR, &st) != 0) {
        assert_int_equal(
            ms_dataset_load_builtin("fashion-mnist", &train, &test, &diag),
            MS_ERR_NOTFOUND);
        ms_diag_format(&diag, text, sizeof text);
        assert_non_null(strstr(text,
                               "/usr/share/datasets/fashion-mnist: install "
                               "the Debian package dataset-fashion-mnist "
                               "(apt-get install dataset-fashion-mnist)"));
    }
    assert_int_equal(ms_dataset_load_builtin("cifar-11", &train, &test, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, "dataset");
    assert_non_null(strstr(diag.reason, "unknown built-in dataset "
                                        "\"cifar-11\": known ones are "
                                        "fashion-mnist, mnist"));
    assert_null(train);
    assert_null(test);
    unsetenv("MESHSWEEP_DATASETS_DIR");
}

static void
test_csv_loads(void **state)
{
    (void) state;
    //  BOM, CRLF, blank lines, spaces, the label in the middle.
    s_write_text(s_tmp(0, "ok.csv"), "\xEF\xBB\xBF"
                                     "a, label ,b\r\n"
                                     "1.5,2,-3\r\n"
                                     "\r\n"
                                     "  4e1 ,0, 0x10\r\n"
                                     "   \n"
                                     "7,1,8");
    ms_dataset_t *d = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_dataset_load_csv(&d, s_path[0], NULL, &diag), MS_OK);
    assert_int_equal(d->n_samples, 3);
    assert_int_equal(d->n_features, 2);
    assert_int_equal(d->n_classes, 3);
    assert_null(d->targets);
    float want[6] = {1.5f, -3.0f, 40.0f, 16.0f, 7.0f, 8.0f};
    for (int i = 0; i < 6; i++)
        assert_true(d->x[i] == want[i]);
    assert_int_equal(d->labels[0], 2);
    assert_int_equal(d->labels[1], 0);
    assert_int_equal(d->labels[2], 1);
    ms_dataset_destroy(&d);
    //  A named label column; one class only still gives n_classes 2.
    s_write_text(s_tmp(1, "named.csv"), "y,x1\n0,1\n0,2\n");
    assert_int_equal(ms_dataset_load_csv(&d, s_path[1], "y", &diag), MS_OK);
    assert_int_equal(d->n_classes, 2);
    assert_int_equal(d->n_features, 1);
    ms_dataset_destroy(&d);
}

static void
test_csv_regression(void **state)
{
    (void) state;
    s_write_text(s_tmp(0, "reg.csv"), "x,label\n1,0.5\n2,-1\n3,7\n");
    ms_dataset_t *d = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_dataset_load(&d, s_path[0], NULL, NULL, &diag), MS_OK);
    assert_int_equal(d->n_classes, 0);
    assert_null(d->labels);
    assert_non_null(d->targets);
    assert_true(d->targets[0] == 0.5f);
    assert_true(d->targets[1] == -1.0f);
    assert_true(d->targets[2] == 7.0f);
    assert_int_equal(ms_dataset_bytes(d), 3 * 4 + 3 * 4);
    assert_int_equal(ms_dataset_check(d, "reg", 0, &diag), MS_OK);
    ms_dataset_destroy(&d);
}

//  --------------------------------------------------------------------------
//  Expect a CSV load to fail with code, where "PATH:LINE", reason part.

static void
s_expect_csv_error(const char *name, const char *text, const char *label,
                   int line, const char *reason_part)
{
    const char *path = s_tmp(3, name);
    if (text)
        s_write_text(path, text);
    ms_dataset_t *d = (ms_dataset_t *) 0x1;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_dataset_load_csv(&d, path, label, &diag);
    char where[600];
    if (line > 0)
        snprintf(where, sizeof where, "%s:%d", path, line);
    else
        snprintf(where, sizeof where, "%s", path);
    if (strcmp(diag.where, where) != 0 || !strstr(diag.reason, reason_part))
        print_error("got rc %d, where \"%s\", reason \"%s\"\n", rc, diag.where,
                    diag.reason);
    assert_int_equal(rc, text ? MS_ERR_DATASET : MS_ERR_IO);
    assert_null(d);
    assert_string_equal(diag.where, where);
    assert_non_null(strstr(diag.reason, reason_part));
}

static void
test_csv_ragged_rows(void **state)
{
    (void) state;
    s_expect_csv_error("rag1.csv", "label,a,b\n1,2,3\n4,5\n", NULL, 3,
                       "row 3 has 2 fields, the header has 3");
    //  The blank line is skipped and not counted as a row; line 4.
    s_expect_csv_error("rag2.csv", "label,a,b\r\n1,2,3\r\n\r\n4,5,6,7\r\n",
                       NULL, 4, "row 3 has 4 fields, the header has 3");
    s_expect_csv_error("rag3.csv", "label,a\n1,2\n1\n", NULL, 3,
                       "row 3 has 1 field, the header has 2");
    //  A quoted comma is not a separator: this row has 3 fields, too many.
    s_expect_csv_error("rag4.csv", "label,a\n\"x,y\",2,3\n", NULL, 2,
                       "row 2 has 3 fields, the header has 2");
}

static void
test_csv_non_numbers(void **state)
{
    (void) state;
    s_expect_csv_error("nn1.csv", "label,a,b\n1,2,abc\n", NULL, 2,
                       "column \"b\" is not numeric (row 2: \"abc\"); list "
                       "it under categorical: to one-hot encode it");
    s_expect_csv_error("nn2.csv", "label,a\n1,2\n0,1.5x\n", NULL, 3,
                       "column \"a\" is not numeric (row 3: \"1.5x\")");
    s_expect_csv_error("nn4.csv", "label,a\n1,1e999\n", NULL, 2,
                       "row 2, column \"a\": \"1e999\" is not a finite "
                       "float32 number");
    s_expect_csv_error("nn5.csv", "label,a\n1,1e39\n", NULL, 2,
                       "not a finite float32 number");
    s_expect_csv_error("nn5b.csv", "label,a\n1,inf\n", NULL, 2,
                       "not a finite float32 number");
    s_expect_csv_error("nn8.csv", "label,a\n1,2 3\n", NULL, 2, "\"2 3\"");
    //  Missing values are refused by default, naming row and column.
    s_expect_csv_error("nn3.csv", "label,a\n1,nan\n", NULL, 2,
                       "row 2, column \"a\": missing value \"nan\"");
    s_expect_csv_error("nn6.csv", "label,a\n1,\n", NULL, 2,
                       "row 2, column \"a\": missing value (empty, NA, N/A, "
                       "NaN, null and ? are missing; set missing: zero or "
                       "mean to fill it)");
    s_expect_csv_error("nn7.csv", "label,a\n,1\n", NULL, 2,
                       "row 2: the label (column \"label\") is missing");
}

static void
test_csv_structure_errors(void **state)
{
    (void) state;
    s_expect_csv_error("empty.csv", "", NULL, 1,
                       "empty file: expected a header row");
    s_expect_csv_error("bom-only.csv", "\xEF\xBB\xBF\r\n", NULL, 1,
                       "empty header row");
    s_expect_csv_error("header-only.csv", "label,a\n\n", NULL, 3,
                       "no data rows after the header");
    s_expect_csv_error("nolabel.csv", "a,b,c\n1,2,3\n", NULL, 1,
                       "no label column \"label\" in the header (columns: "
                       "\"a\", \"b\", \"c\")");
    s_expect_csv_error("nolabel2.csv", "label,a\n1,2\n", "target", 1,
                       "no label column \"target\"");
    s_expect_csv_error("twice.csv", "label,a,label\n1,2,3\n", NULL, 1,
                       "label column \"label\" appears twice");
    s_expect_csv_error("onlylabel.csv", "label\n1\n", NULL, 1,
                       "no feature columns");
    s_expect_csv_error("missing.csv", NULL, NULL, 0, "cannot open");
}

static void
test_csv_binary_input(void **state)
{
    (void) state;
    const char *path = s_tmp(0, "nul.csv");
    s_write(path, "label,a\n1,\0\n", 12, false);
    ms_dataset_t *d = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_dataset_load_csv(&d, path, NULL, &diag),
                     MS_ERR_DATASET);
    char where[600];
    snprintf(where, sizeof where, "%s:2", path);
    assert_string_equal(diag.where, where);
    assert_non_null(strstr(diag.reason, "NUL byte"));
    s_write_pair(s_tmp(1, "gz-as-csv.gz"), s_tmp(2, "gz-as-csv-l.gz"), true);
    assert_int_equal(ms_dataset_load(&d, s_path[1], NULL, NULL, &diag),
                     MS_ERR_DATASET);
    assert_string_equal(diag.where, s_path[1]);
    assert_non_null(strstr(diag.reason, "gzip-compressed"));
    s_write_pair(s_tmp(1, "idx-as-csv"), s_tmp(2, "idx-as-csv-l"), false);
    assert_int_equal(ms_dataset_load(&d, s_path[1], NULL, NULL, &diag),
                     MS_ERR_DATASET);
    assert_string_equal(diag.where, s_path[1]);
    assert_non_null(strstr(diag.reason, "is an IDX file: give its labels"));
    //  With its labels, ms_dataset_load reads IDX.
    assert_int_equal(ms_dataset_load(&d, s_path[1], s_path[2], NULL, &diag),
                     MS_OK);
    s_check_standard(d);
    ms_dataset_destroy(&d);
}

//  --------------------------------------------------------------------------
//  Load train (and test, or a split) with options; expect MS_OK.

static void
s_load_ok(const char *train_text, const char *test_text,
          const ms_dataset_csv_options_t *o, ms_dataset_t **train,
          ms_dataset_t **test)
{
    s_write_text(s_tmp(0, "train.csv"), train_text);
    if (test_text)
        s_write_text(s_tmp(1, "test.csv"), test_text);
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_dataset_load_csv_files(s_path[0], test_text ? s_path[1] : NULL,
                                       o, train, test, &diag);
    if (rc != MS_OK)
        print_error("got rc %d, where \"%s\", reason \"%s\"\n", rc, diag.where,
                    diag.reason);
    assert_int_equal(rc, MS_OK);
}

//  --------------------------------------------------------------------------
//  Load train and test with options; expect MS_ERR_DATASET in the file
//  (slot 0: train, 1: test) at line, reason containing part.

static void
s_load_fails(const char *train_text, const char *test_text,
             const ms_dataset_csv_options_t *o, int slot, int line,
             const char *part)
{
    s_write_text(s_tmp(0, "train.csv"), train_text);
    s_write_text(s_tmp(1, "test.csv"), test_text ? test_text : train_text);
    ms_dataset_t *train = (ms_dataset_t *) 0x1, *test = (ms_dataset_t *) 0x1;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_dataset_load_csv_files(s_path[0], s_path[1], o, &train, &test,
                                       &diag);
    char where[600];
    if (line > 0)
        snprintf(where, sizeof where, "%s:%d", s_path[slot], line);
    else
        snprintf(where, sizeof where, "%s", s_path[slot]);
    if (rc != MS_ERR_DATASET || strcmp(diag.where, where) != 0 ||
        !strstr(diag.reason, part))
        print_error("got rc %d, where \"%s\", reason \"%s\"\n", rc, diag.where,
                    diag.reason);
    assert_int_equal(rc, MS_ERR_DATASET);
    assert_null(train);
    assert_null(test);
    assert_string_equal(diag.where, where);
    assert_non_null(strstr(diag.reason, part));
}

static void
test_csv_quoted_fields(void **state)
{
    (void) state;
    //  A BOM, CRLF, a quoted header name with a space, quoted numbers,
    //  a label with a comma and one with a doubled quote, no final newline.
    ms_dataset_csv_options_t o;
    ms_dataset_csv_options_init(&o);
    o.label = "species";
    ms_dataset_t *d = NULL;
    s_load_ok("\xEF\xBB\xBF\"sepal length\",width,species\r\n"
              "5.1,\"3.5\",setosa\r\n"
              "4.9, 3.0 ,\"versi, color\"\r\n"
              "6.3,\"3.3\",\"vir\"\"ginica\"\r\n"
              "5.0,3.6,setosa",
              NULL, &o, &d, NULL);
    ms_dataset_destroy(&d);
    ms_diag_t diag;
    //  Without label: the default column "label" is not there.
    assert_int_equal(ms_dataset_load_csv(&d, s_path[0], NULL, &diag),
                     MS_ERR_DATASET);
    assert_non_null(strstr(diag.reason, "no label column \"label\""));
    assert_int_equal(ms_dataset_load_csv(&d, s_path[0], "species", &diag),
                     MS_OK);
    assert_int_equal(d->n_samples, 4);
    assert_int_equal(d->n_features, 2);
    assert_int_equal(d->n_classes, 3);
    assert_string_equal(ms_dataset_class_name(d, 0), "setosa");
    assert_string_equal(ms_dataset_class_name(d, 1), "versi, color");
    assert_string_equal(ms_dataset_class_name(d, 2), "vir\"ginica");
    assert_null(ms_dataset_class_name(d, 3));
    assert_null(ms_dataset_class_name(d, -1));
    assert_string_equal(ms_dataset_feature_name(d, 0), "sepal length");
    assert_string_equal(ms_dataset_feature_name(d, 1), "width");
    assert_null(ms_dataset_feature_name(d, 2));
    int want_labels[4] = {0, 1, 2, 0};
    float want_x[8] = {5.1f, 3.5f, 4.9f, 3.0f, 6.3f, 3.3f, 5.0f, 3.6f};
    for (int i = 0; i < 4; i++)
        assert_int_equal(d->labels[i], want_labels[i]);
    for (int i = 0; i < 8; i++)
        assert_true(d->x[i] == want_x[i]);
    //  The class names travel with a split's parts.
    ms_dataset_t *a = NULL, *b = NULL;
    assert_int_equal(ms_dataset_split(d, 0.25, 3, &a, &b), MS_OK);
    assert_string_equal(ms_dataset_class_name(a, 2), "vir\"ginica");
    assert_string_equal(ms_dataset_class_name(b, 0), "setosa");
    ms_dataset_destroy(&d); // the parts keep the names alive
    assert_string_equal(ms_dataset_class_name(a, 1), "versi, color");
    ms_dataset_destroy(&a);
    ms_dataset_destroy(&b);
    //  A quoted field with a newline is one row: the bad field of the
    //  next row is on line 4 but in row 3.
    s_expect_csv_error("nl.csv", "label,a\n\"x\ny\",1\n\"z\",oops\n", NULL, 4,
                       "column \"a\" is not numeric (row 3: \"oops\")");
    //  IDX data has no class names.
    assert_null(ms_dataset_class_name(NULL, 0));
}

static void
test_csv_string_labels(void **state)
{
    (void) state;
    ms_dataset_csv_options_t o;
    ms_dataset_csv_options_init(&o);
    o.label = "species";
    ms_dataset_t *tr = NULL, *te = NULL;
    //  Sorted by name whatever the order of the rows; the test file maps
    //  to the training classes (and may miss one).
    s_load_ok("a,species\n1,virginica\n2,setosa\n3,versicolor\n4,setosa\n",
              "a,species\n5,versicolor\n6,virginica\n", &o, &tr, &te);
    assert_int_equal(tr->n_classes, 3);
    assert_int_equal(te->n_classes, 3);
    assert_int_equal(tr->labels[0], 2);
    assert_int_equal(tr->labels[1], 0);
    assert_int_equal(tr->labels[2], 1);
    assert_int_equal(te->labels[0], 1);
    assert_int_equal(te->labels[1], 2);
    assert_string_equal(ms_dataset_class_name(te, 1), "versicolor");
    ms_dataset_destroy(&tr);
    ms_dataset_destroy(&te);
    //  A class the training file never had: refused in the test file.
    s_load_fails("a,species\n1,x\n2,y\n", "a,species\n1,y\n2,z\n", &o, 1, 3,
                 "row 3: class \"z\" (column \"species\") is not a class of "
                 "the training data (classes: x, y)");
    //  The test file must have the training file's header.
    s_load_fails("a,species\n1,x\n2,y\n", "b,species\n1,y\n", &o, 1, 1,
                 "the header differs from the training file's: column 1 is "
                 "\"b\" here, \"a\" there");
    //  One class only cannot train a classifier.
    s_load_fails("a,species\n1,x\n2,x\n", NULL, &o, 0, 0,
                 "holds one class only (\"x\")");
    //  A mixed column is names: "10" < "9" < "x" by byte value.
    s_load_ok("a,label\n1,9\n2,x\n3,10\n", NULL, NULL, &tr, NULL);
    assert_string_equal(ms_dataset_class_name(tr, 0), "10");
    assert_string_equal(ms_dataset_class_name(tr, 1), "9");
    assert_string_equal(ms_dataset_class_name(tr, 2), "x");
    assert_int_equal(tr->labels[0], 1);
    ms_dataset_destroy(&tr);
    //  Integer labels keep their meaning and have no names; the test
    //  file's labels must then be numbers.
    s_load_ok("a,label\n1,0\n2,3\n", "a,label\n1,2\n", NULL, &tr, &te);
    assert_int_equal(tr->n_classes, 4);
    assert_null(tr->class_names);
    assert_int_equal(te->labels[0], 2);
    ms_dataset_destroy(&tr);
    ms_dataset_destroy(&te);
    s_load_fails("a,label\n1,0\n2,3\n", "a,label\n1,cat\n", NULL, 1, 2,
                 "row 2: label \"cat\" (column \"label\") is not a number");
    s_load_fails("a,label\n1,0\n2,3\n", "a,label\n1,2\n1,4\n", NULL, 1, 3,
                 "row 3: label 4 (column \"label\") is not a class of the "
                 "training data (0 to 3)");
    s_load_fails("a,label\n1,0\n2,3\n", "a,label\n1,2.5\n", NULL, 1, 2,
                 "row 2: label 2.5 (column \"label\") is not a class");
    //  Regression: the test file's targets are any numbers.
    s_load_ok("a,label\n1,0.5\n2,3\n", "a,label\n1,-7.25\n", NULL, &tr, &te);
    assert_int_equal(te->n_classes, 0);
    assert_true(te->targets[0] == -7.25f);
    ms_dataset_destroy(&tr);
    ms_dataset_destroy(&te);
}

static void
test_csv_label_by_index(void **state)
{
    (void) state;
    ms_dataset_csv_options_t o;
    ms_dataset_csv_options_init(&o);
    o.label_index = 0;
    o.label = "ignored";
    ms_dataset_t *d = NULL;
    s_load_ok("kind,x,y\nb,1,2\na,3,4\n", NULL, &o, &d, NULL);
    assert_int_equal(d->n_features, 2);
    assert_int_equal(d->labels[0], 1);
    assert_true(d->x[0] == 1.0f && d->x[3] == 4.0f);
    ms_dataset_destroy(&d);
    o.label_index = 3;
    s_load_fails("kind,x,y\nb,1,2\na,3,4\n", NULL, &o, 0, 1,
                 "label column index 3 is out of range: the header has 3 "
                 "columns (0..2)");
}

static void
test_csv_missing_fill(void **state)
{
    (void) state;
    const char *train = "label,a,b\n0,1,NA\n1,3,4\n0,,6\n";
    const char *test = "label,a,b\n1,?,\n1,7,N/A\n";
    ms_dataset_csv_options_t o;
    ms_dataset_csv_options_init(&o);
    //  Refused by default, naming the file, row and column.
    s_load_fails(train, test, &o, 0, 2,
                 "row 2, column \"b\": missing value \"NA\"");
    s_load_fails("label,a,b\n0,1,2\n", test, &o, 1, 2,
                 "row 2, column \"a\": missing value \"?\"");
    ms_dataset_t *tr = NULL, *te = NULL;
    o.missing = MS_DATASET_MISSING_ZERO;
    s_load_ok(train, test, &o, &tr, &te);
    float zero_tr[6] = {1, 0, 3, 4, 0, 6}, zero_te[4] = {0, 0, 7, 0};
    for (int i = 0; i < 6; i++)
        assert_true(tr->x[i] == zero_tr[i]);
    for (int i = 0; i < 4; i++)
        assert_true(te->x[i] == zero_te[i]);
    ms_dataset_destroy(&tr);
    ms_dataset_destroy(&te);
    //  Means of the training file (a: 2, b: 5), used for the test file too.
    o.missing = MS_DATASET_MISSING_MEAN;
    s_load_ok(train, test, &o, &tr, &te);
    float mean_tr[6] = {1, 5, 3, 4, 2, 6}, mean_te[4] = {2, 5, 7, 5};
    for (int i = 0; i < 6; i++)
        assert_true(tr->x[i] == mean_tr[i]);
    for (int i = 0; i < 4; i++)
        assert_true(te->x[i] == mean_te[i]);
    ms_dataset_destroy(&tr);
    ms_dataset_destroy(&te);
    //  A column with no value at all has no mean.
    s_load_fails("label,a,b\n0,1,\n1,2,NA\n", NULL, &o, 0, 0,
                 "column \"b\": every value of the training rows is missing");
    //  A missing label is never filled.
    s_load_fails("label,a\n0,1\nNA,2\n", NULL, &o, 0, 3,
                 "row 3: the label (column \"label\") is missing");
}

static void
test_csv_categorical(void **state)
{
    (void) state;
    const char *train = "label,colour,size\n0,red,1\n1,blue,2\n0,green,3\n"
                        "1,red,4\n";
    ms_dataset_csv_options_t o;
    ms_dataset_csv_options_init(&o);
    //  Not listed: refused by name, saying what to do.
    s_load_fails(train, NULL, &o, 0, 2,
                 "column \"colour\" is not numeric (row 2: \"red\"); list it "
                 "under categorical: to one-hot encode it");
    const char *cats[1] = {"colour"};
    o.categorical = cats;
    o.n_categorical = 1;
    ms_dataset_t *tr = NULL, *te = NULL;
    s_load_ok(train, "label,colour,size\n1,green,9\n", &o, &tr, &te);
    assert_int_equal(tr->n_features, 4);
    assert_string_equal(ms_dataset_feature_name(tr, 0), "colour=blue");
    assert_string_equal(ms_dataset_feature_name(tr, 1), "colour=green");
    assert_string_equal(ms_dataset_feature_name(tr, 2), "colour=red");
    assert_string_equal(ms_dataset_feature_name(tr, 3), "size");
    float want[16] = {0, 0, 1, 1, 1, 0, 0, 2, 0, 1, 0, 3, 0, 0, 1, 4};
    for (int i = 0; i < 16; i++)
        assert_true(tr->x[i] == want[i]);
    float want_te[4] = {0, 1, 0, 9};
    for (int i = 0; i < 4; i++)
        assert_true(te->x[i] == want_te[i]);
    ms_dataset_destroy(&tr);
    ms_dataset_destroy(&te);
    //  A category training never saw: refused, naming it.
    s_load_fails(train, "label,colour,size\n1,red,1\n1,purple,9\n", &o, 1, 3,
                 "row 3, column \"colour\": category \"purple\" is not in the "
                 "training data (categories: blue, green, red)");
    //  A missing category under mean: each category's frequency.
    o.missing = MS_DATASET_MISSING_MEAN;
    s_load_ok("label,colour,size\n0,red,1\n1,blue,2\n0,,3\n1,red,4\n", NULL, &o,
              &tr, NULL);
    assert_int_equal(tr->n_features, 3);
    assert_true(fabsf(tr->x[6] - 1.0f / 3) < 1e-6f);
    assert_true(fabsf(tr->x[7] - 2.0f / 3) < 1e-6f);
    assert_true(tr->x[8] == 3.0f);
    ms_dataset_destroy(&tr);
    //  A categorical column with no value at all gives no feature
    //  (found by the fuzz target: nothing to sort).
    o.missing = MS_DATASET_MISSING_ZERO;
    s_load_ok("label,colour,size\n0,,1\n1,NA,2\n", NULL, &o, &tr, NULL);
    assert_int_equal(tr->n_features, 1);
    assert_string_equal(ms_dataset_feature_name(tr, 0), "size");
    ms_dataset_destroy(&tr);
    o.missing = MS_DATASET_MISSING_MEAN;
    s_load_fails("label,colour,size\n0,,1\n1,NA,2\n", NULL, &o, 0, 0,
                 "column \"colour\": every value of the training rows is "
                 "missing");
    //  Names that are not columns, or the label.
    const char *bad[1] = {"shape"};
    o.categorical = bad;
    s_load_fails(train, NULL, &o, 0, 1,
                 "categorical column \"shape\" is not in the header (columns: "
                 "label, colour, size)");
    const char *lab[1] = {"label"};
    o.categorical = lab;
    s_load_fails(train, NULL, &o, 0, 1,
                 "column \"label\" is the label column; it cannot also be "
                 "categorical");
}

//  --------------------------------------------------------------------------
//  A CSV text of n rows "i % 3 class, i" (caller frees).

static char *
s_rows_text(int n)
{
    size_t size = 32 + (size_t) n * 24;
    char *text = malloc(size);
    assert_non_null(text);
    size_t used = (size_t) snprintf(text, size, "label,id\n");
    for (int i = 0; i < n; i++)
        used += (size_t) snprintf(text + used, size - used, "%c,%d\n",
                                  "abc"[i % 3], i);
    return text;
}

static void
test_csv_split(void **state)
{
    (void) state;
    char *text = s_rows_text(100);
    ms_dataset_csv_options_t o;
    ms_dataset_csv_options_init(&o);
    o.split = 0.2;
    o.split_seed = 7;
    ms_dataset_t *tr = NULL, *te = NULL, *tr2 = NULL, *te2 = NULL;
    s_load_ok(text, NULL, &o, &tr, &te);
    assert_int_equal(tr->n_samples, 80);
    assert_int_equal(te->n_samples, 20);
    assert_int_equal(te->n_classes, 3);
    assert_string_equal(ms_dataset_class_name(te, 2), "c");
    //  Every row once, in one part or the other.
    int seen[100] = {0};
    for (int64_t i = 0; i < 80; i++)
        seen[(int) tr->x[i]]++;
    for (int64_t i = 0; i < 20; i++)
        seen[(int) te->x[i]]++;
    for (int i = 0; i < 100; i++)
        assert_int_equal(seen[i], 1);
    //  The same seed gives the same split; another seed another.
    s_load_ok(text, NULL, &o, &tr2, &te2);
    assert_memory_equal(te->x, te2->x, 20 * sizeof(float));
    assert_memory_equal(tr->labels, tr2->labels, 80 * sizeof(int32_t));
    ms_dataset_destroy(&tr2);
    ms_dataset_destroy(&te2);
    o.split_seed = 8;
    s_load_ok(text, NULL, &o, &tr2, &te2);
    assert_memory_not_equal(te->x, te2->x, 20 * sizeof(float));
    ms_dataset_destroy(&tr);
    ms_dataset_destroy(&te);
    ms_dataset_destroy(&tr2);
    ms_dataset_destroy(&te2);
    free(text);
    //  Too few rows for a test row.
    s_load_fails("label,id\na,1\nb,2\n", NULL, &o, 0, 0,
                 "split 0.2 of 2 rows leaves no test row");
    //  Out of range: refused as options.
    o.split = 1.5;
    ms_diag_t diag;
    assert_int_equal(
        ms_dataset_load_csv_files(s_path[0], NULL, &o, &tr, &te, &diag),
        MS_ERR_INVALID);
    assert_string_equal(diag.where, "split");
}

static void
test_csv_malformed(void **state)
{
    (void) state;
    s_expect_csv_error("unterminated.csv", "label,a\n1,\"2\n0,3\n", NULL, 4,
                       "row 2: the file ends inside a quoted field");
    s_expect_csv_error("quote-inside.csv", "label,a\n1,2\n0,3\"4\n", NULL, 3,
                       "row 3: malformed quoting");
    s_expect_csv_error("after-quote.csv", "label,a\n1,\"2\"x\n", NULL, 2,
                       "row 2: malformed quoting");
    s_expect_csv_error("header-quote.csv", "label,\"a\n", NULL, 2,
                       "row 1: the file ends inside a quoted field");
}

static void
test_csv_like(void **state)
{
    (void) state;
    const char *cats[1] = {"colour"};
    ms_dataset_csv_options_t o;
    ms_dataset_csv_options_init(&o);
    o.label = "y";
    o.categorical = cats;
    o.n_categorical = 1;
    ms_dataset_t *tr = NULL, *d = NULL;
    s_load_ok("colour,y\nred,no\nblue,yes\n", NULL, &o, &tr, NULL);
    s_write_text(s_tmp(2, "more.csv"), "colour,y\nblue,no\n");
    ms_diag_t diag;
    //  No categorical list given: the reference decides.
    ms_dataset_csv_options_t plain;
    ms_dataset_csv_options_init(&plain);
    assert_int_equal(ms_dataset_load_csv_like(&d, s_path[2], &plain, tr, &diag),
                     MS_OK);
    assert_int_equal(d->n_features, 2);
    assert_true(d->x[0] == 1.0f && d->x[1] == 0.0f);
    assert_int_equal(d->labels[0], 0);
    assert_string_equal(ms_dataset_class_name(d, 1), "yes");
    ms_dataset_destroy(&d);
    //  Data to predict on: the header without the label column.
    s_write_text(s_tmp(3, "unlabelled.csv"), "colour\nred\nblue\n");
    assert_int_equal(ms_dataset_load_csv_like(&d, s_path[3], NULL, tr, &diag),
                     MS_OK);
    assert_int_equal(d->n_samples, 2);
    assert_null(d->labels);
    assert_null(d->targets);
    assert_true(d->x[0] == 0.0f && d->x[1] == 1.0f && d->x[2] == 1.0f);
    ms_dataset_destroy(&d);
    //  The schema as plain data (a weights file's metadata), rebuilt
    //  without the training file, reads the same.
    ms_dataset_csv_schema_t sc;
    assert_int_equal(ms_dataset_csv_schema(tr, &sc), MS_OK);
    assert_int_equal(sc.n_columns, 2);
    assert_int_equal(sc.label_column, 1);
    assert_int_equal(sc.n_classes, 2);
    assert_string_equal(sc.class_names[1], "yes");
    assert_true(sc.categorical[0]);
    assert_int_equal(sc.n_categories[0], 2);
    assert_string_equal(sc.categories[0][1], "red");
    assert_int_equal(sc.n_features, 2);
    ms_dataset_t *ref = NULL;
    assert_int_equal(ms_dataset_csv_reference_new(&ref, &sc, &diag), MS_OK);
    ms_dataset_destroy(&tr); // the reference owns copies
    assert_int_equal(ref->n_samples, 0);
    assert_string_equal(ms_dataset_class_name(ref, 0), "no");
    assert_string_equal(ms_dataset_feature_name(ref, 0), "colour=blue");
    assert_int_equal(ms_dataset_load_csv_like(&d, s_path[2], NULL, ref, &diag),
                     MS_OK);
    assert_true(d->x[0] == 1.0f && d->x[1] == 0.0f);
    assert_int_equal(d->labels[0], 0);
    ms_dataset_destroy(&d);
    //  A schema whose names are out of order is refused.
    assert_int_equal(ms_dataset_csv_schema(ref, &sc), MS_OK);
    const char *backwards[2] = {"yes", "no"};
    sc.class_names = backwards;
    ms_dataset_t *bad = NULL;
    assert_int_equal(ms_dataset_csv_reference_new(&bad, &sc, &diag),
                     MS_ERR_INVALID);
    assert_null(bad);
    assert_string_equal(diag.where, "schema.classes");
    ms_dataset_destroy(&ref);
    assert_int_equal(ms_dataset_csv_schema(NULL, &sc), MS_ERR_INVALID);
    ms_dataset_t *idx = ms_dataset_new(1, 1, 2);
    assert_int_equal(ms_dataset_load_csv_like(&d, s_path[2], NULL, idx, &diag),
                     MS_ERR_INVALID);
    ms_dataset_destroy(&idx);
}

//  Data to predict on is matched to the training header by name: another
//  order reads the same numbers, the label column may be absent, an
//  unknown or missing column is refused naming it; the missing-value rule
//  and its fills travel with the schema.
static void
test_csv_like_by_name(void **state)
{
    (void) state;
    const char *cats[1] = {"colour"};
    ms_dataset_csv_options_t o;
    ms_dataset_csv_options_init(&o);
    o.label = "y";
    o.categorical = cats;
    o.n_categorical = 1;
    o.missing = MS_DATASET_MISSING_MEAN;
    ms_dataset_t *tr = NULL, *d = NULL, *ref = NULL;
    s_load_ok("a,colour,y\n1,red,no\n3,blue,yes\n", NULL, &o, &tr, NULL);
    ms_dataset_csv_schema_t sc;
    assert_int_equal(ms_dataset_csv_schema(tr, &sc), MS_OK);
    assert_int_equal(sc.missing, MS_DATASET_MISSING_MEAN);
    ms_diag_t diag;
    assert_int_equal(ms_dataset_csv_reference_new(&ref, &sc, &diag), MS_OK);
    ms_dataset_destroy(&tr);
    //  Swapped columns, a missing number filled with the training mean.
    s_write_text(s_tmp(2, "swapped.csv"), "y,colour,a\nyes,red,\nno,blue,5\n");
    assert_int_equal(ms_dataset_load_csv_like(&d, s_path[2], NULL, ref, &diag),
                     MS_OK);
    assert_int_equal(d->n_features, 3);
    assert_true(d->x[0] == 2.0f && d->x[1] == 0.0f && d->x[2] == 1.0f);
    assert_true(d->x[3] == 5.0f && d->x[4] == 1.0f && d->x[5] == 0.0f);
    assert_int_equal(d->labels[0], 1);
    assert_int_equal(d->labels[1], 0);
    ms_dataset_destroy(&d);
    //  No label column, another order.
    s_write_text(s_tmp(3, "nolabel.csv"), "colour,a\nblue,7\n");
    assert_int_equal(ms_dataset_load_csv_like(&d, s_path[3], NULL, ref, &diag),
                     MS_OK);
    assert_null(d->labels);
    assert_true(d->x[0] == 7.0f && d->x[1] == 1.0f && d->x[2] == 0.0f);
    ms_dataset_destroy(&d);
    //  An extra column, a missing feature column.
    s_write_text(s_tmp(2, "extra.csv"), "a,colour,y,b\n1,red,no,2\n");
    assert_int_equal(ms_dataset_load_csv_like(&d, s_path[2], NULL, ref, &diag),
                     MS_ERR_DATASET);
    assert_non_null(strstr(diag.reason, "column 4 \"b\" is not a column of "
                                        "the training data"));
    s_write_text(s_tmp(3, "short.csv"), "colour,y\nred,no\n");
    assert_int_equal(ms_dataset_load_csv_like(&d, s_path[3], NULL, ref, &diag),
                     MS_ERR_DATASET);
    assert_non_null(strstr(diag.reason, "no column \"a\""));
    //  An unknown class and an unknown category name row and column.
    s_write_text(s_tmp(2, "zzz.csv"), "a,colour,y\n1,red,zzz\n");
    assert_int_equal(ms_dataset_load_csv_like(&d, s_path[2], NULL, ref, &diag),
                     MS_ERR_DATASET);
    assert_non_null(strstr(diag.reason, "row 2: class \"zzz\""));
    assert_non_null(strstr(diag.reason, "classes: no, yes"));
    ms_dataset_destroy(&ref);
}

//  --------------------------------------------------------------------------
//  A dataset of n rows, 3 features; row i holds i, 2i, -i; label i % 5.

static ms_dataset_t *
s_numbered(int64_t n)
{
    ms_dataset_t *d = ms_dataset_new(n, 3, 5);
    assert_non_null(d);
    for (int64_t i = 0; i < n; i++) {
        d->x[i * 3] = (float) i;
        d->x[i * 3 + 1] = (float) (2 * i);
        d->x[i * 3 + 2] = (float) -i;
        d->labels[i] = (int32_t) (i % 5);
    }
    return d;
}

static void
test_new_and_bytes(void **state)
{
    (void) state;
    ms_dataset_t *d = ms_dataset_new(10, 7, 0);
    assert_non_null(d);
    assert_int_equal(d->n_classes, 0);
    assert_null(d->labels);
    assert_non_null(d->targets);
    assert_true(d->x[69] == 0.0f);
    assert_int_equal(ms_dataset_bytes(d), 10 * 7 * 4 + 10 * 4);
    ms_dataset_destroy(&d);
    d = ms_dataset_new(0, 7, 3);
    assert_non_null(d);
    assert_null(d->x);
    assert_int_equal(ms_dataset_bytes(d), 0);
    ms_dataset_destroy(&d);
    assert_int_equal(ms_dataset_bytes(NULL), 0);
}

static void
test_load_not_regular(void **state)
{
    (void) state;
    //  A device never ends: refused at once, not read forever.
    ms_dataset_t *d = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_dataset_load(&d, "/dev/zero", NULL, "label", &diag),
                     MS_ERR_IO);
    assert_null(d);
    assert_string_equal(diag.where, "/dev/zero");
    assert_non_null(strstr(diag.reason, "not a regular file"));
    ms_diag_clear(&diag);
    assert_int_equal(ms_dataset_load(&d, "/tmp", NULL, "label", &diag),
                     MS_ERR_IO);
    assert_non_null(strstr(diag.reason, "is a directory"));
}

static void
test_split_checked_diag(void **state)
{
    (void) state;
    ms_dataset_t *d = s_numbered(100);
    ms_dataset_t *tr = NULL, *va = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    //  0.999999 of 100 rows rounds to 100 validation rows: no training row.
    assert_int_equal(ms_dataset_split_checked(d, 0.999999, 7, &tr, &va, &diag),
                     MS_ERR_INVALID);
    assert_null(tr);
    assert_null(va);
    assert_string_equal(diag.where, "validation_split");
    assert_string_equal(diag.reason,
                        "0.999999 leaves no training rows (100 samples)");
    ms_diag_clear(&diag);
    assert_int_equal(ms_dataset_split_checked(d, 1.5, 7, &tr, &va, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, "validation_split");
    assert_string_equal(diag.reason, "1.5 is outside [0, 1)");
    //  The check alone says the same, without copying.
    ms_diag_clear(&diag);
    assert_int_equal(ms_dataset_split_check(d, 0.999999, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.reason,
                        "0.999999 leaves no training rows (100 samples)");
    assert_int_equal(ms_dataset_split_check(d, 0.99, NULL), MS_OK);
    //  NULL diag is fine; a good split leaves diag alone.
    assert_int_equal(ms_dataset_split_checked(d, 1.0, 7, &tr, &va, NULL),
                     MS_ERR_INVALID);
    ms_diag_clear(&diag);
    assert_int_equal(ms_dataset_split_checked(d, 0.2, 7, &tr, &va, &diag),
                     MS_OK);
    assert_int_equal(tr->n_samples, 80);
    assert_string_equal(diag.reason, "");
    ms_dataset_destroy(&tr);
    ms_dataset_destroy(&va);
    ms_dataset_destroy(&d);
}

static void
test_split_deterministic(void **state)
{
    (void) state;
    ms_dataset_t *d = s_numbered(100);
    ms_dataset_t *tr = NULL, *va = NULL, *tr2 = NULL, *va2 = NULL;
    assert_int_equal(ms_dataset_split(d, 0.2, 7, &tr, &va), MS_OK);
    assert_int_equal(tr->n_samples, 80);
    assert_int_equal(va->n_samples, 20);
    assert_int_equal(tr->n_features, 3);
    assert_int_equal(va->n_classes, 5);
    //  Every row lands in exactly one part, intact.
    int seen[100] = {0};
    ms_dataset_t *parts[2] = {tr, va};
    for (int p = 0; p < 2; p++)
        for (int64_t i = 0; i < parts[p]->n_samples; i++) {
            int row = (int) parts[p]->x[i * 3];
            assert_true(parts[p]->x[i * 3 + 1] == (float) (2 * row));
            assert_true(parts[p]->x[i * 3 + 2] == (float) -row);
            assert_int_equal(parts[p]->labels[i], row % 5);
            seen[row]++;
        }
    for (int i = 0; i < 100; i++)
        assert_int_equal(seen[i], 1);
    //  It is a shuffle, not the first 80 rows.
    int in_order = 1;
    for (int i = 0; i < 80; i++)
        in_order &= tr->x[i * 3] == (float) i;
    assert_false(in_order);
    //  Same seed, same split (also after other draws).
    assert_int_equal(ms_dataset_split(d, 0.2, 7, &tr2, &va2), MS_OK);
    assert_memory_equal(tr->x, tr2->x, 80 * 3 * sizeof(float));
    assert_memory_equal(va->labels, va2->labels, 20 * sizeof(int32_t));
    ms_dataset_destroy(&tr2);
    ms_dataset_destroy(&va2);
    //  Another seed, another split.
    assert_int_equal(ms_dataset_split(d, 0.2, 8, &tr2, &va2), MS_OK);
    assert_true(memcmp(va->x, va2->x, 20 * 3 * sizeof(float)) != 0);
    ms_dataset_destroy(&tr2);
    ms_dataset_destroy(&va2);
    //  The source is untouched.
    for (int i = 0; i < 100; i++)
        assert_true(d->x[i * 3] == (float) i);
    //  Fraction 0: empty validation set; bad fractions refused.
    assert_int_equal(ms_dataset_split(d, 0.0, 7, &tr2, &va2), MS_OK);
    assert_int_equal(tr2->n_samples, 100);
    assert_int_equal(va2->n_samples, 0);
    assert_null(va2->x);
    assert_null(va2->labels);
    ms_dataset_destroy(&tr2);
    ms_dataset_destroy(&va2);
    assert_int_equal(ms_dataset_split(d, 1.0, 7, &tr2, &va2), MS_ERR_INVALID);
    assert_null(tr2);
    assert_int_equal(ms_dataset_split(d, -0.1, 7, &tr2, &va2), MS_ERR_INVALID);
    assert_int_equal(ms_dataset_split(d, NAN, 7, &tr2, &va2), MS_ERR_INVALID);
    //  Rounding: 0.15 of 10 rows is 2 (round half away from zero: 1.5).
    ms_dataset_t *small = s_numbered(10);
    assert_int_equal(ms_dataset_split(small, 0.15, 1, &tr2, &va2), MS_OK);
    assert_int_equal(va2->n_samples, 2);
    assert_int_equal(tr2->n_samples, 8);
    ms_dataset_destroy(&tr2);
    ms_dataset_destroy(&va2);
    ms_dataset_destroy(&small);
    ms_dataset_destroy(&tr);
    ms_dataset_destroy(&va);
    ms_dataset_destroy(&d);
}

static void
test_scale_unit_bytes(void **state)
{
    (void) state;
    //  Pixel data whose train max is 250, not 255: still x / 255.
    unsigned char buf[64];
    uint32_t idims[3] = {3, 2, 2};
    uint32_t ldims[1] = {3};
    unsigned char px[12] = {0, 250, 128, 1, 2, 3, 4, 5, 250, 10, 20, 30};
    s_write(s_tmp(0, "su-images"), buf, s_idx_bytes(buf, 8, 3, idims, px, 12),
            false);
    s_write(s_tmp(1, "su-labels"), buf,
            s_idx_bytes(buf, 8, 1, ldims, s_labels, 3), false);
    s_write_pair(s_tmp(2, "su-test-images"), s_tmp(3, "su-test-labels"), false);
    ms_dataset_t *train = NULL, *test = NULL, *tr = NULL, *va = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_dataset_load_idx(&train, s_path[0], s_path[1], &diag),
                     MS_OK);
    assert_int_equal(ms_dataset_load_idx(&test, s_path[2], s_path[3], &diag),
                     MS_OK);
    //  The split keeps the byte range too.
    assert_int_equal(ms_dataset_split(train, 0.34, 3, &tr, &va), MS_OK);
    ms_dataset_scale(tr, va, MS_SCALE_UNIT);
    ms_dataset_scale(train, test, MS_SCALE_UNIT);
    for (int i = 0; i < 12; i++) {
        assert_true(train->x[i] == (float) px[i] / 255.0f);
        assert_true(test->x[i] == (float) s_pixels[i] / 255.0f);
    }
    for (int64_t i = 0; i < tr->n_samples * 4; i++)
        assert_true(tr->x[i] >= 0.0f && tr->x[i] <= 250.0f / 255.0f);
    //  none leaves data alone.
    ms_dataset_scale(train, NULL, MS_SCALE_NONE);
    assert_true(train->x[1] == 250.0f / 255.0f);
    ms_dataset_destroy(&train);
    ms_dataset_destroy(&test);
    ms_dataset_destroy(&tr);
    ms_dataset_destroy(&va);
}

static void
test_scale_unit_general(void **state)
{
    (void) state;
    ms_dataset_t *train = ms_dataset_new(2, 2, 2);
    ms_dataset_t *test = ms_dataset_new(1, 2, 2);
    float tx[4] = {-2, 0, 6, 2}, sx[2] = {10, -2};
    memcpy(train->x, tx, sizeof tx);
    memcpy(test->x, sx, sizeof sx);
    ms_dataset_scale(train, test, MS_SCALE_UNIT);
    //  Whole-array min -2, max 6: (x + 2) / 8.
    assert_true(train->x[0] == 0.0f);
    assert_true(train->x[1] == 0.25f);
    assert_true(train->x[2] == 1.0f);
    assert_true(train->x[3] == 0.5f);
    assert_true(test->x[0] == 1.5f); // outside the train range: not clipped
    assert_true(test->x[1] == 0.0f);
    ms_dataset_destroy(&train);
    ms_dataset_destroy(&test);
}

static void
test_scale_standard(void **state)
{
    (void) state;
    ms_dataset_t *train = ms_dataset_new(4, 3, 2);
    ms_dataset_t *test = ms_dataset_new(1, 3, 2);
    //  Feature 0: 1,2,3,4 (mean 2.5, sd sqrt(1.25)); feature 1: 10,10,10,10
    //  (no spread); feature 2: 0,0,0,8 (mean 2, sd sqrt(12)).
    float tx[12] = {1, 10, 0, 2, 10, 0, 3, 10, 0, 4, 10, 8};
    float sx[3] = {5, 11, 2};
    memcpy(train->x, tx, sizeof tx);
    memcpy(test->x, sx, sizeof sx);
    ms_dataset_scale(train, test, MS_SCALE_STANDARD);
    for (int j = 0; j < 3; j++) {
        double sum = 0, sq = 0;
        for (int i = 0; i < 4; i++) {
            sum += train->x[i * 3 + j];
            sq += (double) train->x[i * 3 + j] * train->x[i * 3 + j];
        }
        assert_true(fabs(sum / 4) < 1e-6);
        if (j != 1)
            assert_true(fabs(sq / 4 - 1.0) < 1e-6);
    }
    assert_true(train->x[0] == (float) ((1 - 2.5) / sqrt(1.25)));
    assert_true(train->x[1] == 0.0f); // centred, not divided
    assert_true(test->x[0] == (float) ((5 - 2.5) / sqrt(1.25)));
    assert_true(test->x[1] == 1.0f);
    assert_true(test->x[2] == 0.0f);
    ms_dataset_destroy(&train);
    ms_dataset_destroy(&test);
}

static void
test_scale_sets(void **state)
{
    (void) state;
    //  Train, validation and test scaled in one call with train stats;
    //  a set of the wrong width and a NULL entry are left alone.
    ms_dataset_t *train = ms_dataset_new(2, 1, 2);
    ms_dataset_t *val = ms_dataset_new(1, 1, 2);
    ms_dataset_t *test = ms_dataset_new(1, 1, 2);
    ms_dataset_t *odd = ms_dataset_new(1, 2, 2);
    train->x[0] = 1;
    train->x[1] = 3; // mean 2, sd 1
    val->x[0] = 4;
    test->x[0] = 0;
    odd->x[0] = 7;
    ms_dataset_t *others[4] = {val, NULL, test, odd};
    ms_dataset_scale_sets(train, others, 4, MS_SCALE_STANDARD);
    assert_true(train->x[0] == -1.0f && train->x[1] == 1.0f);
    assert_true(val->x[0] == 2.0f);
    assert_true(test->x[0] == -2.0f);
    assert_true(odd->x[0] == 7.0f);
    //  Unit: min 1, max 3 of the (original) train values.
    train->x[0] = 1;
    train->x[1] = 3;
    val->x[0] = 2;
    ms_dataset_scale_sets(train, others, 1, MS_SCALE_UNIT);
    assert_true(train->x[0] == 0.0f && train->x[1] == 1.0f);
    assert_true(val->x[0] == 0.5f);
    ms_dataset_destroy(&train);
    ms_dataset_destroy(&val);
    ms_dataset_destroy(&test);
    ms_dataset_destroy(&odd);
}

static void
test_check(void **state)
{
    (void) state;
    ms_dataset_t *d = s_numbered(6); // labels 0..4, n_classes 5
    ms_diag_t diag;
    assert_int_equal(ms_dataset_check(d, "train", 0, &diag), MS_OK);
    assert_int_equal(ms_dataset_check(d, "train", 10, &diag), MS_OK);
    //  A test set with a class the training set never had.
    assert_int_equal(ms_dataset_check(d, "test.csv", 4, &diag), MS_ERR_DATASET);
    assert_string_equal(diag.where, "test.csv");
    assert_string_equal(diag.reason, "sample 4: label 4 out of range [0, 4)");
    d->labels[2] = -1;
    assert_int_equal(ms_dataset_check(d, "train", 0, &diag), MS_ERR_DATASET);
    assert_string_equal(diag.reason, "sample 2: label -1 out of range [0, 5)");
    d->labels[2] = 2;
    d->x[7] = INFINITY;
    assert_int_equal(ms_dataset_check(d, "train", 0, &diag), MS_ERR_DATASET);
    assert_string_equal(diag.reason, "sample 2: feature 1 is not finite");
    ms_dataset_destroy(&d);
}

static void
test_fashion_mnist_real(void **state)
{
    (void) state;
    struct stat st;
    if (stat(FMNIST_DIR "/train-images-idx3-ubyte.gz", &st) != 0) {
        print_message("SKIP: " FMNIST_DIR " not installed (apt-get install "
                      "dataset-fashion-mnist)\n");
        skip();
    }
    unsetenv("MESHSWEEP_DATASETS_DIR");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ms_dataset_t *train = NULL, *test = NULL;
    ms_diag_t diag;
    int rc = ms_dataset_load_builtin("fashion-mnist", &train, &test, &diag);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds =
        (double) (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (rc)
        print_error("%s: %s\n", diag.where, diag.reason);
    assert_int_equal(rc, MS_OK);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    int64_t bytes = ms_dataset_bytes(train) + ms_dataset_bytes(test);
    print_message("fashion-mnist loaded in %.2f s; arrays %.1f MiB, peak RSS "
                  "%.1f MiB\n",
                  seconds, bytes / 1048576.0, ru.ru_maxrss / 1024.0);
    assert_int_equal(train->n_samples, 60000);
    assert_int_equal(train->n_features, 784);
    assert_int_equal(train->n_classes, 10);
    assert_int_equal(test->n_samples, 10000);
    assert_int_equal(test->n_features, 784);
    assert_int_equal(test->n_classes, 10);
    assert_int_equal(train->labels[0], 9); // ankle boot
    assert_int_equal(train->labels[3], 3);
    assert_int_equal(test->labels[1], 2);
    double first = 0;
    for (int j = 0; j < 784; j++)
        first += train->x[j];
    assert_true(first == 76247.0); // pixel sum of the first image
    int counts[10] = {0};
    for (int64_t i = 0; i < train->n_samples; i++)
        counts[train->labels[i]]++;
    for (int c = 0; c < 10; c++)
        assert_int_equal(counts[c], 6000);
    assert_int_equal(ms_dataset_check(train, "train", 10, &diag), MS_OK);
    //  Peak memory: the arrays, not a second copy. Not meaningful under
    //  ASan (its quarantine keeps freed blocks) or valgrind (its realloc
    //  always copies).
    const char *preload = getenv("LD_PRELOAD");
    bool checker = preload && strstr(preload, "vgpreload");
#if defined(__SANITIZE_ADDRESS__)
    checker = true;
#endif
    if (!checker)
        assert_true((int64_t) ru.ru_maxrss * 1024 < bytes + 64 * 1048576);
    assert_true(seconds < 20.0);
    ms_dataset_scale(train, test, MS_SCALE_UNIT);
    float lo = 1, hi = 0;
    for (int64_t k = 0; k < train->n_samples * 784; k++) {
        lo = train->x[k] < lo ? train->x[k] : lo;
        hi = train->x[k] > hi ? train->x[k] : hi;
    }
    assert_true(lo == 0.0f && hi == 1.0f);
    for (int64_t k = 0; k < test->n_samples * 784; k++)
        assert_true(test->x[k] >= 0.0f && test->x[k] <= 1.0f);
    ms_dataset_destroy(&train);
    ms_dataset_destroy(&test);
}

//  --------------------------------------------------------------------------
//  The labels file of an IDX images file, by name; none for other names.

static void
test_idx_labels_path(void **state)
{
    (void) state;
    char *p = ms_dataset_idx_labels_path("/d/train-images-idx3-ubyte.gz");
    assert_string_equal(p, "/d/train-labels-idx1-ubyte.gz");
    free(p);
    p = ms_dataset_idx_labels_path("t10k-images-idx3-ubyte");
    assert_string_equal(p, "t10k-labels-idx1-ubyte");
    free(p);
    assert_null(ms_dataset_idx_labels_path("iris.csv"));
    assert_null(ms_dataset_idx_labels_path(NULL));
}

//  --------------------------------------------------------------------------
//  The format rule: IDX only when both files are named as IDX images.

static void
test_idx_pair(void **state)
{
    (void) state;
    char *a = (char *) "x", *b = (char *) "y";
    assert_true(ms_dataset_idx_pair("d/train-images-idx3-ubyte",
                                    "d/t10k-images-idx3-ubyte.gz", &a, &b));
    assert_string_equal(a, "d/train-labels-idx1-ubyte");
    assert_string_equal(b, "d/t10k-labels-idx1-ubyte.gz");
    free(a);
    free(b);
    //  One IDX-named file and a CSV: CSV, no labels paths.
    a = (char *) "x", b = (char *) "y";
    assert_false(
        ms_dataset_idx_pair("train-images-idx3-ubyte", "test.csv", &a, &b));
    assert_null(a);
    assert_null(b);
    assert_false(ms_dataset_idx_pair("iris.csv", "iris.csv", &a, &b));
    assert_null(a);
    assert_null(b);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idx_raw_loads),
        cmocka_unit_test(test_idx_gzip_loads),
        cmocka_unit_test(test_idx_missing_file),
        cmocka_unit_test(test_idx_bad_magic),
        cmocka_unit_test(test_idx_wrong_type),
        cmocka_unit_test(test_idx_mislabelled_files),
        cmocka_unit_test(test_idx_truncated),
        cmocka_unit_test(test_idx_count_mismatch),
        cmocka_unit_test(test_idx_corrupt_gzip),
        cmocka_unit_test(test_idx_trailing_garbage),
        cmocka_unit_test(test_idx_label_out_of_range),
        cmocka_unit_test(test_builtin_from_env_dir),
        cmocka_unit_test(test_builtin_label_out_of_range),
        cmocka_unit_test(test_builtin_missing_and_unknown),
        cmocka_unit_test(test_csv_loads),
        cmocka_unit_test(test_csv_regression),
        cmocka_unit_test(test_csv_ragged_rows),
        cmocka_unit_test(test_csv_non_numbers),
        cmocka_unit_test(test_csv_structure_errors),
        cmocka_unit_test(test_csv_binary_input),
        cmocka_unit_test(test_csv_quoted_fields),
        cmocka_unit_test(test_csv_string_labels),
        cmocka_unit_test(test_csv_label_by_index),
        cmocka_unit_test(test_csv_missing_fill),
        cmocka_unit_test(test_csv_categorical),
        cmocka_unit_test(test_csv_split),
        cmocka_unit_test(test_csv_malformed),
        cmocka_unit_test(test_csv_like),
        cmocka_unit_test(test_csv_like_by_name),
        cmocka_unit_test(test_new_and_bytes),
        cmocka_unit_test(test_split_deterministic),
        cmocka_unit_test(test_split_checked_diag),
        cmocka_unit_test(test_load_not_regular),
        cmocka_unit_test(test_scale_unit_bytes),
        cmocka_unit_test(test_scale_unit_general),
        cmocka_unit_test(test_scale_standard),
        cmocka_unit_test(test_scale_sets),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_idx_labels_path),
        cmocka_unit_test(test_idx_pair),
        cmocka_unit_test(test_fashion_mnist_real),
    };
    return cmocka_run_group_tests(tests, s_setup, s_teardown);
}
