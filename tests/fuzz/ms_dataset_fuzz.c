/*  =========================================================================
    ms_dataset_fuzz - libFuzzer target: dataset files (CSV, and IDX image +
    label pairs, raw or gzip) as users hand them to `meshsweep run/train`

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The first input byte picks the format (bit 0: CSV) and, for CSV, the
    options (bit 1: missing mean, bit 2: column "colour"
    categorical, bit 3: label by index 0, bit 4: a 0.3 split of the one
    file, else the file is its own test file, parsed with the training
    encoding); the rest is written to files in a private temp dir and
    loaded. Every input must load or be refused with
    MS_ERR_DATASET / MS_ERR_IO and a diagnostic naming the file.
*/
#include "ms_dataset.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char s_dir[64];

//  --------------------------------------------------------------------------
//  Write bytes to a file in the temp dir.

static void
s_write(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    assert(f);
    if (size)
        fwrite(data, 1, size, f);
    fclose(f);
}

//  --------------------------------------------------------------------------
//  One input: byte 0 selects CSV or IDX; for IDX byte 1 splits the rest.

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!s_dir[0]) {
        snprintf(s_dir, sizeof s_dir, "/tmp/ms_dataset_fuzz.XXXXXX");
        assert(mkdtemp(s_dir));
    }
    if (size < 2)
        return 0;
    char a[128], b[128];
    snprintf(a, sizeof a, "%s/a", s_dir);
    snprintf(b, sizeof b, "%s/b", s_dir);
    ms_dataset_t *ds = NULL;
    ms_diag_t diag;
    int rc;
    ms_dataset_t *other = NULL;
    if (data[0] & 1) {
        s_write(a, data + 1, size - 1);
        static const char *const cats[1] = {"colour"};
        ms_dataset_csv_options_t o;
        ms_dataset_csv_options_init(&o);
        if (data[0] & 2)
            o.missing = MS_DATASET_MISSING_MEAN;
        if (data[0] & 4) {
            o.categorical = cats;
            o.n_categorical = 1;
        }
        if (data[0] & 8)
            o.label_index = 0;
        if (data[0] & 16) {
            o.split = 0.3;
            o.split_seed = data[0];
        }
        rc = ms_dataset_load_csv_files(a, a, &o, &ds, &other, &diag);
        if (rc == MS_OK) {
            assert(other && other->n_features == ds->n_features);
            for (int32_t i = 0; i < ds->n_classes && ds->class_names; i++)
                assert(ms_dataset_class_name(ds, i));
            ms_dataset_destroy(&other);
        } else
            assert(!other);
    } else {
        size_t rest = size - 2;
        size_t cut = rest ? (size_t) data[1] * rest / 255 : 0;
        s_write(a, data + 2, cut);
        s_write(b, data + 2 + cut, rest - cut);
        rc = ms_dataset_load_idx(&ds, a, b, &diag);
    }
    if (rc == MS_OK) {
        assert(ds && ds->n_samples >= 1);
        ms_dataset_destroy(&ds);
    } else
        assert(!ds && strstr(diag.where, s_dir) == diag.where);
    return 0;
}
