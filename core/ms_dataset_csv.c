/*  =========================================================================
    ms_dataset_csv - CSV datasets as users have them: libcsv parsing,
    string class labels, missing values, one-hot categorical columns and a
    seeded train/test split

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Sweep specification" (the dataset mapping: label, missing,
    categorical, split) and "The training engine", Data.

    Parsing. libcsv (Debian's libcsv3) does the RFC 4180 part: quoted
    fields with commas, doubled quotes and newlines inside, CRLF or LF,
    blanks around unquoted fields trimmed, blank lines skipped. It runs in
    strict mode, so a quote inside an unquoted field or text after a
    closing quote is a parse error, and with CSV_STRICT_FINI a file that
    ends inside a quoted field is one too: each becomes one error naming
    the row, never a guess. The file is read in 64 KiB blocks and handed to
    libcsv one physical line at a time, which is how errors know their
    line (the diag says "PATH:LINE", the line on which the bad field or row
    ends) as well as their row (header = row 1, as a spreadsheet counts).
    A UTF-8 byte order mark is dropped; a NUL byte is refused (not text).

    Two passes over memory, one over the file. Classes, categories and
    means are known only at the end of the training file, so rows are
    first kept as cells of 4 bytes: a float for a numeric column (NaN
    marks a missing value), an id for a categorical or label column
    (UINT32_MAX marks a missing category). Ids are interned strings in the
    order first seen; at the end they are ranked (sorted by byte value),
    which makes the encoding independent of row order, and the cells are
    rewritten as ranks. Then the float rows are built: numeric values as
    they are, a categorical cell as k indicator features, a missing value
    as its fill (0, or the training mean). Without categorical columns a
    numeric cell already is the feature's float, so the cells are
    compacted into the feature array in place and the peak is the dataset
    once (measured: 63 MB for a 20,000 x 785 CSV, as the getline loader
    before it); with one-hot columns the rows are built beside the cells,
    which are freed at once, so the peak stays within twice the
    dataset as float32 that ms_dataset.c budgets.

    The encoding (label column, class names, per-column categories, the
    fills, feature names) is one reference-counted object shared by every
    dataset loaded from the training file: the test file, the parts of a
    split, the copies ms_dataset_split makes. A test file is parsed with
    it, so its classes and categories are looked up while parsing and an
    unseen one is refused naming its row. The encoding is a function of
    the training file's bytes and the options only, so every node that
    parses the same uploaded bytes with the options the spec carries gets
    the same classes, categories and features.

    Labels. All numbers: today's meaning (integers: classes 0..max;
    otherwise regression). Anything else: class names. A mixed column
    ("1", "2", "x") is names, "1" being a name too; documented in the
    header, tested.

    Limits against hostile files: columns and one-hot features at most
    MS_DATASET_MAX_FEATURES, categories per column at most
    MS_DATASET_MAX_CATEGORIES, labels interned only up to
    MS_DATASET_MAX_CLASSES distinct values (a regression column of numbers
    stops being interned there; a name after that is refused).

    Not done: delimiters other than a comma (semicolon CSV), type
    inference of categorical columns (a user lists them: silently
    one-hot encoding a mistyped numeric column would hide the mistake).
*/
#include "ms_dataset.h"
#include "ms_dataset_internal.h"
#include "ms_rng.h"

#include <csv.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define S_READ_BYTES (64 * 1024) // file read block
#define S_ID_MISSING UINT32_MAX  // a missing category in a cell
#define S_LIST_MAX 160           // bytes of a list quoted in an error

//  Kind of a column.
typedef enum { S_COL_NUMERIC, S_COL_CATEGORICAL, S_COL_LABEL } s_kind_t;

//  Interned strings of one column: id = order of first appearance.
typedef struct {
    char **names;     // n strings (owned)
    uint32_t n;       // distinct strings
    uint32_t cap;     // names allocated
    uint32_t *slots;  // open addressing: id + 1, 0 = empty
    uint32_t n_slots; // a power of two, > 2 n
} s_strtab_t;

struct ms_dataset_encoding {
    atomic_int refs;              // references
    int32_t n_cols;               // header columns
    char **col_names;             // n_cols header names
    int32_t label_col;            // index of the label column
    bool string_labels;           // labels are class names
    int32_t n_classes;            // classes (0: regression)
    char **class_names;           // n_classes sorted names, or NULL
    bool *categorical;            // per column
    uint32_t *n_categories;       // per column (categorical ones)
    char ***categories;           // per column sorted names, or NULL
    int32_t *first_feature;       // per column: its first feature (-1: label)
    int32_t n_features;           // features after one-hot encoding
    float *fill;                  // n_features: a missing value's value
    char **feature_names;         // n_features names
    ms_dataset_missing_t missing; // the rule the fills came from
};

//  State of one file being parsed.
typedef struct {
    const char *path;                  // for diagnostics (borrowed)
    ms_diag_t *diag;                   // where errors go (may be NULL)
    const ms_dataset_csv_options_t *o; // options (borrowed)
    const ms_dataset_encoding_t *ref;  // the training encoding, or NULL
    int rc;                            // first error (MS_OK: none)
    int64_t line;                      // physical line being parsed
    int64_t rows;                      // data rows kept
    bool header_done;                  // the header row was read
    int32_t field;                     // fields seen in the current row
    char **names;                      // header names (owned)
    int32_t n_cols;                    // header columns
    int32_t cap_names;                 // names allocated
    s_kind_t *kind;                    // per column
    int32_t label_col;                 // label column index
    s_strtab_t *tabs;                  // per column (label, categorical)
    uint32_t *row;                     // cells of the row being read
    float row_label;                   // its label as a number, or NaN
    uint32_t *cells;                   // rows * n_cols kept cells
    float *label_num;                  // rows: labels as numbers (or NaN)
    int64_t cap_rows;                  // rows allocated
    bool labels_numeric;               // every label a finite number
    bool labels_int;                   // ... an integer in [0, MAX)
    int32_t max_label;                 // largest integer label
    bool label_tab_off;                // too many labels to intern
    bool unlabelled_ok;                // a file without the label column
                                       // may load (data to predict on)
    bool unlabelled;                   // ... and this one has none
    int32_t *perm;                     // by name (load_csv_like): field k
                                       // of a row is column perm[k] of
                                       // the training layout; or NULL
    int32_t n_fields;                  // fields per row of the file
} s_parse_t;

//  --------------------------------------------------------------------------
//  Defaults of the options.

void
ms_dataset_csv_options_init(ms_dataset_csv_options_t *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->label_index = -1;
    opts->missing = MS_DATASET_MISSING_ERROR;
}

//  ==========================================================================
//  Interned strings

//  --------------------------------------------------------------------------
//  FNV-1a of n bytes.

static uint32_t
s_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char) s[i];
        h *= 16777619u;
    }
    return h;
}

//  --------------------------------------------------------------------------
//  Free a string table's contents.

static void
s_strtab_free(s_strtab_t *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        free(t->names[i]);
    free(t->names);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

//  --------------------------------------------------------------------------
//  Find s in t, or add it when max allows. *id gets its id. Returns
//  MS_OK, MS_ERR_RANGE (t holds max strings already) or MS_ERR_NOMEM.

static int
s_strtab_intern(s_strtab_t *t, const char *s, uint32_t max, uint32_t *id)
{
    size_t len = strlen(s);
    uint32_t h = s_hash(s, len);
    if (t->n_slots) {
        for (uint32_t i = h & (t->n_slots - 1);;
             i = (i + 1) & (t->n_slots - 1)) {
            uint32_t v = t->slots[i];
            if (!v)
                break;
            if (strcmp(t->names[v - 1], s) == 0) {
                *id = v - 1;
                return MS_OK;
            }
        }
    }
    if (t->n >= max)
        return MS_ERR_RANGE;
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 16;
        char **names = realloc(t->names, cap * sizeof *names);
        if (!names)
            return MS_ERR_NOMEM;
        t->names = names;
        t->cap = cap;
    }
    if ((t->n + 1) * 2 >= t->n_slots) {
        uint32_t n_slots = t->n_slots ? t->n_slots * 2 : 64;
        uint32_t *slots = calloc(n_slots, sizeof *slots);
        if (!slots)
            return MS_ERR_NOMEM;
        for (uint32_t k = 0; k < t->n; k++) {
            const char *name = t->names[k];
            uint32_t i = s_hash(name, strlen(name)) & (n_slots - 1);
            while (slots[i])
                i = (i + 1) & (n_slots - 1);
            slots[i] = k + 1;
        }
        free(t->slots);
        t->slots = slots;
        t->n_slots = n_slots;
    }
    char *copy = strdup(s);
    if (!copy)
        return MS_ERR_NOMEM;
    uint32_t i = h & (t->n_slots - 1);
    while (t->slots[i])
        i = (i + 1) & (t->n_slots - 1);
    t->slots[i] = t->n + 1;
    t->names[t->n] = copy;
    *id = t->n++;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  qsort comparison of string pointers.

static int
s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}

//  --------------------------------------------------------------------------
//  Index of s in the sorted array names[0 .. n), or -1.

static int64_t
s_find_sorted(char *const *names, uint32_t n, const char *s)
{
    char *const *hit = bsearch(&s, names, n, sizeof *names, s_cmp_str);
    return hit ? hit - names : -1;
}

//  --------------------------------------------------------------------------
//  Take t's names sorted (t keeps none); rank[id] gets each id's place.
//  Returns the sorted array, or NULL on out of memory.

static char **
s_strtab_sorted(s_strtab_t *t, uint32_t *rank)
{
    char **sorted = malloc((t->n ? t->n : 1) * sizeof *sorted);
    if (!sorted)
        return NULL;
    if (t->n) { // an all-missing categorical column interned nothing
        memcpy(sorted, t->names, t->n * sizeof *sorted);
        qsort(sorted, t->n, sizeof *sorted, s_cmp_str);
    }
    for (uint32_t id = 0; id < t->n; id++)
        rank[id] = (uint32_t) s_find_sorted(sorted, t->n, t->names[id]);
    free(t->names);
    free(t->slots);
    memset(t, 0, sizeof *t);
    return sorted;
}

//  --------------------------------------------------------------------------
//  Write "a, b, c" (at most S_LIST_MAX bytes, "..." when cut) into out.

static const char *
s_list(char *const *names, uint32_t n, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        if (used + len + 6 >= size) {
            snprintf(out + used, size - used, "%s...", i ? ", " : "");
            break;
        }
        used += (size_t) snprintf(out + used, size - used, "%s%s",
                                  i ? ", " : "", names[i]);
    }
    return out;
}

//  ==========================================================================
//  Encoding

//  --------------------------------------------------------------------------
//  Free an encoding.

static void
s_encoding_free(ms_dataset_encoding_t *e)
{
    if (!e)
        return;
    for (int32_t j = 0; j < e->n_cols; j++) {
        free(e->col_names ? e->col_names[j] : NULL);
        if (e->categories && e->categories[j]) {
            for (uint32_t k = 0; k < e->n_categories[j]; k++)
                free(e->categories[j][k]);
            free(e->categories[j]);
        }
    }
    for (int32_t i = 0; e->class_names && i < e->n_classes; i++)
        free(e->class_names[i]);
    for (int32_t i = 0; e->feature_names && i < e->n_features; i++)
        free(e->feature_names[i]);
    free(e->col_names);
    free(e->class_names);
    free(e->categorical);
    free(e->n_categories);
    free(e->categories);
    free(e->first_feature);
    free(e->fill);
    free(e->feature_names);
    free(e);
}

//  --------------------------------------------------------------------------
//  One more reference.

ms_dataset_encoding_t *
ms_dataset_encoding_ref(ms_dataset_encoding_t *self)
{
    if (self)
        atomic_fetch_add(&self->refs, 1);
    return self;
}

//  --------------------------------------------------------------------------
//  One reference less.

void
ms_dataset_encoding_release(ms_dataset_encoding_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    if (atomic_fetch_sub(&(*self_p)->refs, 1) == 1)
        s_encoding_free(*self_p);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Class names of an encoding.

const char *const *
ms_dataset_encoding_class_names(const ms_dataset_encoding_t *self)
{
    return self ? (const char *const *) self->class_names : NULL;
}

//  --------------------------------------------------------------------------
//  The encoding behind a dataset, or NULL.

static const ms_dataset_encoding_t *
s_encoding_of(const ms_dataset_t *d)
{
    const ms_dataset_owner_t *owner = d ? d->owner_ : NULL;
    return owner ? owner->encoding : NULL;
}

//  --------------------------------------------------------------------------
//  Class name i.

const char *
ms_dataset_class_name(const ms_dataset_t *self, int32_t i)
{
    if (!self || !self->class_names || i < 0 || i >= self->n_classes)
        return NULL;
    return self->class_names[i];
}

//  --------------------------------------------------------------------------
//  Feature name j.

const char *
ms_dataset_feature_name(const ms_dataset_t *self, int32_t j)
{
    const ms_dataset_encoding_t *e = s_encoding_of(self);
    if (!e || j < 0 || j >= e->n_features)
        return NULL;
    return e->feature_names[j];
}

//  ==========================================================================
//  Parsing

//  --------------------------------------------------------------------------
//  Record the first error at the current line: "PATH:LINE", reason.

static void s_fail(s_parse_t *p, int64_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
s_fail(s_parse_t *p, int64_t line, const char *fmt, ...)
{
    if (p->rc)
        return;
    p->rc = MS_ERR_DATASET;
    if (!p->diag)
        return;
    snprintf(p->diag->where, sizeof p->diag->where, "%s:%lld", p->path,
             (long long) line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->diag->reason, sizeof p->diag->reason, fmt, ap);
    va_end(ap);
}

//  --------------------------------------------------------------------------
//  Record out of memory.

static void
s_nomem(s_parse_t *p)
{
    if (p->rc)
        return;
    p->rc = MS_ERR_NOMEM;
    ms_diag_set_code(p->diag, MS_ERR_NOMEM, p->path, "out of memory");
}

//  --------------------------------------------------------------------------
//  The spreadsheet row of the row being read (header: 1).

static int64_t
s_row(const s_parse_t *p)
{
    return p->header_done ? p->rows + 2 : 1;
}

//  --------------------------------------------------------------------------
//  Trim blanks around a field of len bytes (NUL-terminated) in place;
//  returns its start.

static char *
s_trim_n(char *s, size_t len)
{
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        s[--len] = '\0';
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

//  --------------------------------------------------------------------------
//  Whether a trimmed field is a missing value.

static bool
s_is_missing(const char *s)
{
    static const char *const tokens[] = {"na", "n/a", "nan", "null", "?"};
    if (!*s)
        return true;
    if (*s != 'n' && *s != 'N' && *s != '?')
        return false; // the common case: a number or a name

    for (size_t i = 0; i < sizeof tokens / sizeof *tokens; i++)
        if (strcasecmp(s, tokens[i]) == 0)
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  Parse a number that fits a float; false when s is not one.

static bool
s_number(const char *s, double *v)
{
    errno = 0;
    char *end = NULL;
    *v = strtod(s, &end);
    return end != s && !*end;
}

//  --------------------------------------------------------------------------
//  One header field.

static void
s_header_field(s_parse_t *p, char *text)
{
    if (p->n_cols >= MS_DATASET_MAX_FEATURES) {
        s_fail(p, p->line, "too many columns (more than %d)",
               MS_DATASET_MAX_FEATURES);
        return;
    }
    if (p->n_cols == p->cap_names) {
        int32_t cap = p->cap_names ? p->cap_names * 2 : 16;
        char **names = realloc(p->names, (size_t) cap * sizeof *names);
        if (!names) {
            s_nomem(p);
            return;
        }
        p->names = names;
        p->cap_names = cap;
    }
    char *name = strdup(text); // trimmed by s_on_field
    if (!name) {
        s_nomem(p);
        return;
    }
    p->names[p->n_cols++] = name;
}

//  --------------------------------------------------------------------------
//  Column index of a header name, -1 when absent, -2 when it appears more
//  than once (*first, *second: the two fields, 0-based).

static int32_t
s_column(const s_parse_t *p, const char *name, int32_t *first, int32_t *second)
{
    int32_t at = -1;
    for (int32_t j = 0; j < p->n_cols; j++)
        if (strcmp(p->names[j], name) == 0) {
            if (at >= 0) {
                *first = at;
                *second = j;
                return -2;
            }
            at = j;
        }
    return at;
}

//  --------------------------------------------------------------------------
//  Allocate the per-column arrays of a parse (n_cols known, >= 1).

static int
s_alloc_columns(s_parse_t *p)
{
    size_t n = p->n_cols > 0 ? (size_t) p->n_cols : 1;
    p->kind = calloc(n, sizeof *p->kind);
    p->tabs = calloc(n, sizeof *p->tabs);
    p->row = calloc(n, sizeof *p->row);
    if (!p->kind || !p->tabs || !p->row) {
        s_nomem(p);
        return MS_ERR_NOMEM;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The header just read, matched to the training header (p->ref) by name:
//  every training column must be there once, the label column may be
//  missing (data without labels), no other column may be. Sets p->perm
//  and p->unlabelled and puts the training names in p->names. Returns
//  MS_OK or the refusal (p->rc), naming the first column that does not
//  match.

static int
s_header_by_name(s_parse_t *p)
{
    const ms_dataset_encoding_t *e = p->ref;
    char cols[S_LIST_MAX + 8];
    int32_t n = p->n_cols;
    int32_t *perm = malloc((size_t) n * sizeof *perm);
    bool *used = calloc((size_t) e->n_cols, sizeof *used);
    if (!perm || !used) {
        free(perm);
        free(used);
        s_nomem(p);
        return p->rc;
    }
    for (int32_t k = 0; k < n && !p->rc; k++) {
        //  The first unused training column of that name: a name that
        //  appears twice in both headers maps in order.
        int32_t at = -1;
        for (int32_t j = 0; j < e->n_cols && at < 0; j++)
            if (!used[j] && strcmp(p->names[k], e->col_names[j]) == 0)
                at = j;
        if (at < 0) {
            s_list(e->col_names, (uint32_t) e->n_cols, cols, sizeof cols);
            s_fail(p, p->line,
                   "column %d \"%.60s\" is not a column of the training "
                   "data%s (training columns: %s)",
                   (int) k + 1, p->names[k],
                   s_column(p, p->names[k], &(int32_t){0}, &(int32_t){0}) == -2
                       ? ", or appears more often than there"
                       : "",
                   cols);
            break;
        }
        used[at] = true;
        perm[k] = at;
    }
    for (int32_t j = 0; j < e->n_cols && !p->rc; j++)
        if (!used[j] && j != e->label_col)
            s_fail(p, p->line,
                   "the header has no column \"%.60s\", a feature column of "
                   "the training data",
                   e->col_names[j]);
    free(used);
    if (p->rc) {
        free(perm);
        return p->rc;
    }
    p->unlabelled = n == e->n_cols - 1;
    p->n_fields = n;
    p->perm = perm;
    for (int32_t j = 0; j < p->n_cols; j++)
        free(p->names[j]);
    p->n_cols = 0;
    for (int32_t j = 0; j < e->n_cols && !p->rc; j++)
        s_header_field(p, e->col_names[j]);
    return p->rc;
}

//  --------------------------------------------------------------------------
//  The header row is complete: find the label and categorical columns.

static void
s_header_end(s_parse_t *p)
{
    const ms_dataset_csv_options_t *o = p->o;
    char cols[S_LIST_MAX + 8];
    if (p->n_cols == 0 || (p->n_cols == 1 && !p->names[0][0])) {
        s_fail(p, p->line, "empty header row");
        return;
    }
    if (p->ref && p->unlabelled_ok) {
        //  Data to predict on (ms_dataset_load_csv_like): the columns are
        //  found by name, in any order, and the label column may be
        //  absent. The row keeps the training layout (the label cell
        //  unused when absent), so p->names becomes the training names.
        if (s_header_by_name(p) != MS_OK)
            return;
    }
    if (p->ref) {
        const ms_dataset_encoding_t *e = p->ref;
        for (int32_t j = 0; j < p->n_cols || j < e->n_cols; j++)
            if (j >= p->n_cols || j >= e->n_cols ||
                strcmp(p->names[j], e->col_names[j]) != 0) {
                s_fail(p, p->line,
                       "the header differs from the training file's: "
                       "column %d is \"%.60s\" here, \"%.60s\" there",
                       (int) j + 1, j < p->n_cols ? p->names[j] : "(none)",
                       j < e->n_cols ? e->col_names[j] : "(none)");
                return;
            }
        //  The training file decided the label and categorical columns.
        p->label_col = e->label_col;
        if (s_alloc_columns(p) != MS_OK)
            return;
        for (int32_t j = 0; j < p->n_cols; j++)
            p->kind[j] = j == e->label_col   ? S_COL_LABEL
                         : e->categorical[j] ? S_COL_CATEGORICAL
                                             : S_COL_NUMERIC;
        p->header_done = true;
        return;
    }
    const char *label = o->label ? o->label : "label";
    if (o->label_index >= 0) {
        if (o->label_index >= p->n_cols) {
            s_fail(p, p->line,
                   "label column index %d is out of range: the header has "
                   "%d column%s (0..%d)",
                   (int) o->label_index, (int) p->n_cols,
                   p->n_cols == 1 ? "" : "s", (int) p->n_cols - 1);
            return;
        }
        p->label_col = o->label_index;
        label = p->names[p->label_col];
    } else {
        int32_t a = 0, b = 0;
        p->label_col = s_column(p, label, &a, &b);
        if (p->label_col == -2) {
            s_fail(p, p->line,
                   "label column \"%s\" appears twice (fields %d and %d)",
                   label, (int) a + 1, (int) b + 1);
            return;
        }
        if (p->label_col < 0) {
            char q[S_LIST_MAX + 8];
            size_t used = 0;
            for (int32_t j = 0; j < p->n_cols && used < S_LIST_MAX; j++)
                used += (size_t) snprintf(q + used, sizeof q - used, "%s\"%s\"",
                                          j ? ", " : "", p->names[j]);
            if (used >= S_LIST_MAX)
                snprintf(q + S_LIST_MAX, 8, ", ...");
            s_fail(p, p->line,
                   "no label column \"%s\" in the header (columns: %s)", label,
                   q);
            return;
        }
    }
    if (p->n_cols < 2) {
        s_fail(p, p->line,
               "the header has only the label column \"%s\": no feature "
               "columns",
               label);
        return;
    }
    if (s_alloc_columns(p) != MS_OK)
        return;
    p->kind[p->label_col] = S_COL_LABEL;
    for (int32_t c = 0; c < o->n_categorical; c++) {
        int32_t a = 0, b = 0;
        int32_t j = s_column(p, o->categorical[c], &a, &b);
        if (j == -2) {
            s_fail(p, p->line,
                   "categorical column \"%s\" appears twice (fields %d and "
                   "%d)",
                   o->categorical[c], (int) a + 1, (int) b + 1);
            return;
        }
        if (j < 0) {
            s_list(p->names, (uint32_t) p->n_cols, cols, sizeof cols);
            s_fail(p, p->line,
                   "categorical column \"%s\" is not in the header "
                   "(columns: %s)",
                   o->categorical[c], cols);
            return;
        }
        if (j == p->label_col) {
            s_fail(p, p->line,
                   "column \"%s\" is the label column; it cannot also be "
                   "categorical",
                   o->categorical[c]);
            return;
        }
        p->kind[j] = S_COL_CATEGORICAL;
    }
    p->header_done = true;
}

//  --------------------------------------------------------------------------
//  A label field of the current row.

static void
s_label_field(s_parse_t *p, char *text)
{
    const char *col = p->names[p->label_col];
    if (s_is_missing(text)) {
        s_fail(p, p->line, "row %lld: the label (column \"%s\") is missing",
               (long long) s_row(p), col);
        return;
    }
    double v = 0;
    bool num = s_number(text, &v) && isfinite(v) && fabs(v) <= FLT_MAX;
    p->row_label = num ? (float) v : NAN;
    const ms_dataset_encoding_t *e = p->ref;
    char list[S_LIST_MAX + 8];
    if (e && e->string_labels) {
        int64_t k =
            s_find_sorted(e->class_names, (uint32_t) e->n_classes, text);
        if (k < 0) {
            s_fail(p, p->line,
                   "row %lld: class \"%.60s\" (column \"%s\") is not a "
                   "class of the training data (classes: %s)",
                   (long long) s_row(p), text, col,
                   s_list(e->class_names, (uint32_t) e->n_classes, list,
                          sizeof list));
            return;
        }
        p->row[p->label_col] = (uint32_t) k;
        return;
    }
    if (e) { // numeric training labels
        if (!num)
            s_fail(p, p->line,
                   "row %lld: label \"%.60s\" (column \"%s\") is not a "
                   "number, and the training file's labels are numbers",
                   (long long) s_row(p), text, col);
        else if (e->n_classes > 0 &&
                 !(v >= 0 && v < e->n_classes && v == floor(v)))
            s_fail(p, p->line,
                   "row %lld: label %.60s (column \"%s\") is not a class of "
                   "the training data (0 to %d)",
                   (long long) s_row(p), text, col, (int) e->n_classes - 1);
        return;
    }
    if (!num)
        p->labels_numeric = false;
    else if (p->labels_int && v >= 0 && v < MS_DATASET_MAX_CLASSES &&
             v == floor(v)) {
        if ((int32_t) v > p->max_label)
            p->max_label = (int32_t) v;
    } else
        p->labels_int = false;
    if (p->label_tab_off) {
        if (!num)
            s_fail(p, p->line,
                   "row %lld: label \"%.60s\" (column \"%s\"): the column "
                   "holds more than %d distinct values, too many classes",
                   (long long) s_row(p), text, col, MS_DATASET_MAX_CLASSES);
        return;
    }
    uint32_t id = 0;
    int rc = s_strtab_intern(&p->tabs[p->label_col], text,
                             MS_DATASET_MAX_CLASSES, &id);
    if (rc == MS_ERR_NOMEM)
        s_nomem(p);
    else if (rc == MS_ERR_RANGE && !p->labels_numeric)
        s_fail(p, p->line,
               "row %lld: label \"%.60s\" (column \"%s\"): the column holds "
               "more than %d distinct values, too many classes",
               (long long) s_row(p), text, col, MS_DATASET_MAX_CLASSES);
    else if (rc == MS_ERR_RANGE) { // numbers: regression, stop interning
        p->label_tab_off = true;
        s_strtab_free(&p->tabs[p->label_col]);
    } else
        p->row[p->label_col] = id;
}

//  --------------------------------------------------------------------------
//  The "missing value" refusal.

static void
s_missing_fail(s_parse_t *p, const char *col, const char *text)
{
    s_fail(p, p->line,
           "row %lld, column \"%s\": missing value%s%.20s%s (empty, NA, N/A, "
           "NaN, null and ? are missing; set missing: zero or mean to fill "
           "it)",
           (long long) s_row(p), col, *text ? " \"" : "", text,
           *text ? "\"" : "");
}

//  --------------------------------------------------------------------------
//  A categorical field of the current row, column j.

static void
s_category_field(s_parse_t *p, int32_t j, char *text)
{
    const char *col = p->names[j];
    if (s_is_missing(text)) {
        if (p->o->missing == MS_DATASET_MISSING_ERROR)
            s_missing_fail(p, col, text);
        p->row[j] = S_ID_MISSING;
        return;
    }
    const ms_dataset_encoding_t *e = p->ref;
    if (e) {
        int64_t k = s_find_sorted(e->categories[j], e->n_categories[j], text);
        if (k < 0) {
            char list[S_LIST_MAX + 8];
            s_fail(p, p->line,
                   "row %lld, column \"%s\": category \"%.60s\" is not in "
                   "the training data (categories: %s)",
                   (long long) s_row(p), col, text,
                   s_list(e->categories[j], e->n_categories[j], list,
                          sizeof list));
            return;
        }
        p->row[j] = (uint32_t) k;
        return;
    }
    uint32_t id = 0;
    int rc = s_strtab_intern(&p->tabs[j], text, MS_DATASET_MAX_CATEGORIES, &id);
    if (rc == MS_ERR_NOMEM)
        s_nomem(p);
    else if (rc == MS_ERR_RANGE)
        s_fail(p, p->line,
               "row %lld, column \"%s\": more than %d categories (\"%.40s\"): "
               "too many to one-hot encode",
               (long long) s_row(p), col, MS_DATASET_MAX_CATEGORIES, text);
    else
        p->row[j] = id;
}

//  --------------------------------------------------------------------------
//  A numeric field of the current row, column j.

static void
s_numeric_field(s_parse_t *p, int32_t j, char *text)
{
    const char *col = p->names[j];
    float f = NAN;
    if (s_is_missing(text)) {
        if (p->o->missing == MS_DATASET_MISSING_ERROR)
            s_missing_fail(p, col, text);
    } else {
        double v = 0;
        if (!s_number(text, &v)) {
            s_fail(p, p->line,
                   "column \"%s\" is not numeric (row %lld: \"%.40s\"); list "
                   "it under categorical: to one-hot encode it",
                   col, (long long) s_row(p), text);
            return;
        }
        if (!isfinite(v) || fabs(v) > FLT_MAX) {
            s_fail(p, p->line,
                   "row %lld, column \"%s\": \"%.40s\" is not a finite "
                   "float32 number",
                   (long long) s_row(p), col, text);
            return;
        }
        f = (float) v;
    }
    memcpy(&p->row[j], &f, sizeof f);
}

//  --------------------------------------------------------------------------
//  libcsv field callback.

static void
s_on_field(void *s, size_t len, void *data)
{
    s_parse_t *p = data;
    if (p->rc)
        return;
    //  CSV_APPEND_NULL: s[len] is a NUL (NUL bytes inside were refused).
    char *text = s ? s_trim_n(s, len) : (char *) "";
    if (!p->header_done) {
        s_header_field(p, text);
        return;
    }
    int32_t j = p->field++;
    if (p->perm)
        j = j < p->n_fields ? p->perm[j] : p->n_cols;
    else if (p->unlabelled && j >= p->label_col)
        j++; // the file has no label column: skip its slot
    if (j >= p->n_cols)
        return; // counted; the row end refuses it
    switch (p->kind[j]) {
    case S_COL_LABEL:
        s_label_field(p, text);
        break;
    case S_COL_CATEGORICAL:
        s_category_field(p, j, text);
        break;
    default:
        s_numeric_field(p, j, text);
        break;
    }
}

//  --------------------------------------------------------------------------
//  Make room for one more row.

static int
s_grow(s_parse_t *p)
{
    if (p->rows < p->cap_rows)
        return MS_OK;
    int64_t cap = p->cap_rows ? p->cap_rows * 2 : 1024;
    if ((uint64_t) cap > SIZE_MAX / sizeof(uint32_t) / (size_t) p->n_cols)
        return MS_ERR_NOMEM;
    uint32_t *cells =
        realloc(p->cells, (size_t) cap * (size_t) p->n_cols * sizeof *cells);
    if (!cells)
        return MS_ERR_NOMEM;
    p->cells = cells;
    float *labels = realloc(p->label_num, (size_t) cap * sizeof *labels);
    if (!labels)
        return MS_ERR_NOMEM;
    p->label_num = labels;
    p->cap_rows = cap;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  libcsv row callback.

static void
s_on_row(int c, void *data)
{
    s_parse_t *p = data;
    (void) c;
    if (p->rc)
        return;
    if (!p->header_done) {
        s_header_end(p);
        return;
    }
    int32_t n = p->field;
    int32_t want = p->n_cols - (p->unlabelled ? 1 : 0);
    p->field = 0;
    if (n != want) {
        s_fail(p, p->line, "row %lld has %d field%s, the header has %d",
               (long long) s_row(p), (int) n, n == 1 ? "" : "s", (int) want);
        return;
    }
    if (s_grow(p) != MS_OK) {
        if (!p->rc) {
            p->rc = MS_ERR_NOMEM;
            ms_diag_set_code(p->diag, MS_ERR_NOMEM, p->path,
                             "cannot allocate memory for %lld rows",
                             (long long) p->rows + 1);
        }
        return;
    }
    memcpy(p->cells + p->rows * p->n_cols, p->row,
           (size_t) p->n_cols * sizeof *p->row);
    p->label_num[p->rows] = p->row_label;
    p->rows++;
}

//  --------------------------------------------------------------------------
//  Free what a parse holds.

static void
s_parse_free(s_parse_t *p)
{
    for (int32_t j = 0; j < p->n_cols; j++) {
        free(p->names[j]);
        if (p->tabs)
            s_strtab_free(&p->tabs[j]);
    }
    free(p->names);
    free(p->kind);
    free(p->tabs);
    free(p->row);
    free(p->cells);
    free(p->label_num);
    free(p->perm);
    memset(p, 0, sizeof *p);
}

//  --------------------------------------------------------------------------
//  Feed one piece of the file (no '\n' inside but maybe at its end).

static void
s_feed(s_parse_t *p, struct csv_parser *csv, const char *buf, size_t n)
{
    if (memchr(buf, '\0', n)) {
        s_fail(p, p->line, "contains a NUL byte: not a text CSV file");
        return;
    }
    size_t done = csv_parse(csv, buf, n, s_on_field, s_on_row, p);
    if (done != n && !p->rc) {
        if (csv_error(csv) == CSV_EPARSE)
            s_fail(p, p->line,
                   "row %lld: malformed quoting (a '\"' inside an unquoted "
                   "field, or text after a closing quote: quote the whole "
                   "field and double the quotes inside it)",
                   (long long) s_row(p));
        else
            s_nomem(p);
    }
}

//  --------------------------------------------------------------------------
//  Parse a CSV file into p (already set up with path, options, ref).

static int
s_parse_file(s_parse_t *p)
{
    FILE *file = fopen(p->path, "rbe");
    if (!file)
        return ms_diag_set_code(p->diag, MS_ERR_IO, p->path, "cannot open: %s",
                                strerror(errno));
    //  Only regular files: a device such as /dev/zero or a pipe has no
    //  end a reader can rely on (it would read forever), as for IDX.
    struct stat st;
    if (fstat(fileno(file), &st) == 0 && !S_ISREG(st.st_mode)) {
        fclose(file);
        return ms_diag_set_code(p->diag, MS_ERR_IO, p->path, "cannot read: %s",
                                S_ISDIR(st.st_mode) ? "is a directory"
                                                    : "not a regular file");
    }
    struct csv_parser csv;
    if (csv_init(&csv, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) {
        fclose(file);
        return ms_diag_set_code(p->diag, MS_ERR_NOMEM, p->path,
                                "out of memory");
    }
    char *buf = malloc(S_READ_BYTES);
    if (!buf) {
        csv_free(&csv);
        fclose(file);
        return ms_diag_set_code(p->diag, MS_ERR_NOMEM, p->path,
                                "out of memory");
    }
    p->line = 1;
    p->labels_numeric = true;
    p->labels_int = true;
    p->row_label = NAN;
    int64_t total = 0;
    bool first = true;
    size_t n;
    while (!p->rc && (n = fread(buf, 1, S_READ_BYTES, file)) > 0) {
        const char *at = buf;
        if (first) {
            first = false;
            if (n >= 2 && (unsigned char) buf[0] == 0x1f &&
                (unsigned char) buf[1] == 0x8b) {
                p->rc = ms_diag_set_code(
                    p->diag, MS_ERR_DATASET, p->path,
                    "is gzip-compressed: a CSV file must be plain text (an "
                    "IDX file needs its labels file too)");
                break;
            }
            if (n >= 4 && buf[0] == 0 && buf[1] == 0 && buf[2] == 0x08) {
                p->rc = ms_diag_set_code(p->diag, MS_ERR_DATASET, p->path,
                                         "is an IDX file: give its labels "
                                         "file too");
                break;
            }
            if (n >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
                at += 3; // UTF-8 byte order mark
        }
        const char *end = buf + n;
        total += end - at;
        while (at < end && !p->rc) {
            const char *nl = memchr(at, '\n', (size_t) (end - at));
            size_t len = nl ? (size_t) (nl - at) + 1 : (size_t) (end - at);
            s_feed(p, &csv, at, len);
            if (nl && !p->rc)
                p->line++;
            at += len;
        }
    }
    if (!p->rc && ferror(file))
        p->rc = ms_diag_set_code(p->diag, MS_ERR_IO, p->path,
                                 "read failed after line %lld: %s",
                                 (long long) p->line, strerror(errno));
    if (!p->rc && csv_fini(&csv, s_on_field, s_on_row, p) != 0 && !p->rc)
        s_fail(p, p->line,
               "row %lld: the file ends inside a quoted field (a '\"' is "
               "never closed)",
               (long long) s_row(p));
    if (!p->rc && !p->header_done)
        s_fail(p, 1, "%s",
               total == 0 ? "empty file: expected a header row"
                          : "empty header row");
    if (!p->rc && p->rows == 0)
        s_fail(p, p->line + (p->line > 1 ? 0 : 1),
               "no data rows after the header");
    csv_free(&csv);
    free(buf);
    fclose(file);
    return p->rc;
}

//  ==========================================================================
//  From cells to a dataset

//  --------------------------------------------------------------------------
//  Give e its nf features (first_feature and the categories set): the
//  fills (0) and the names, "COLUMN" or "COLUMN=CATEGORY". Returns MS_OK
//  or MS_ERR_NOMEM.

static int
s_encoding_features(ms_dataset_encoding_t *e, int64_t nf)
{
    int32_t n = e->n_cols;
    e->n_features = (int32_t) nf;
    e->fill = calloc((size_t) nf, sizeof *e->fill);
    e->feature_names = calloc((size_t) nf, sizeof *e->feature_names);
    if (!e->fill || !e->feature_names)
        return MS_ERR_NOMEM;
    for (int32_t j = 0; j < n; j++) {
        int32_t f = e->first_feature[j];
        uint32_t k = e->categorical[j] ? e->n_categories[j] : 1;
        for (uint32_t q = 0; f >= 0 && q < k; q++) {
            const char *cat = e->categorical[j] ? e->categories[j][q] : NULL;
            size_t len = strlen(e->col_names[j]) + (cat ? strlen(cat) + 2 : 1);
            char *name = malloc(len);
            if (!name)
                return MS_ERR_NOMEM;
            if (cat)
                snprintf(name, len, "%s=%s", e->col_names[j], cat);
            else
                snprintf(name, len, "%s", e->col_names[j]);
            e->feature_names[f + (int32_t) q] = name;
        }
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Build the encoding of a parsed training file: rank its classes and
//  categories (rewriting the cells), lay out the features. Fills are set
//  later (s_encoding_fill). Returns MS_OK, MS_ERR_DATASET or MS_ERR_NOMEM.

static int
s_encode(s_parse_t *p, ms_dataset_encoding_t **out)
{
    *out = NULL;
    int32_t n = p->n_cols;
    ms_dataset_encoding_t *e = calloc(1, sizeof *e);
    if (!e)
        return MS_ERR_NOMEM;
    atomic_init(&e->refs, 1);
    e->n_cols = n;
    e->label_col = p->label_col;
    e->missing = p->o->missing;
    e->col_names = calloc((size_t) n, sizeof *e->col_names);
    e->categorical = calloc((size_t) n, sizeof *e->categorical);
    e->n_categories = calloc((size_t) n, sizeof *e->n_categories);
    e->categories = calloc((size_t) n, sizeof *e->categories);
    e->first_feature = calloc((size_t) n, sizeof *e->first_feature);
    uint32_t *rank =
        malloc((size_t) (MS_DATASET_MAX_CLASSES > MS_DATASET_MAX_CATEGORIES
                             ? MS_DATASET_MAX_CLASSES
                             : MS_DATASET_MAX_CATEGORIES) *
               sizeof *rank);
    int rc = MS_OK;
    if (!e->col_names || !e->categorical || !e->n_categories ||
        !e->categories || !e->first_feature || !rank) {
        rc = MS_ERR_NOMEM;
        goto fail;
    }
    for (int32_t j = 0; j < n; j++)
        if (!(e->col_names[j] = strdup(p->names[j]))) {
            rc = MS_ERR_NOMEM;
            goto fail;
        }
    //  Labels.
    s_strtab_t *lt = &p->tabs[p->label_col];
    if (!p->labels_numeric) {
        e->string_labels = true;
        if (lt->n < 2) {
            rc = ms_diag_set_code(p->diag, MS_ERR_DATASET, p->path,
                                  "the label column \"%s\" holds one class "
                                  "only (\"%.60s\"): a classifier needs two "
                                  "or more",
                                  p->names[p->label_col], lt->names[0]);
            goto fail;
        }
        e->n_classes = (int32_t) lt->n;
        if (!(e->class_names = s_strtab_sorted(lt, rank))) {
            rc = MS_ERR_NOMEM;
            goto fail;
        }
        for (int64_t r = 0; r < p->rows; r++) {
            uint32_t *cell = &p->cells[r * n + p->label_col];
            *cell = rank[*cell];
        }
    } else
        e->n_classes =
            p->labels_int ? (p->max_label + 1 < 2 ? 2 : p->max_label + 1) : 0;
    //  Features and categories.
    int64_t nf = 0;
    for (int32_t j = 0; j < n; j++) {
        if (j == p->label_col) {
            e->first_feature[j] = -1;
            continue;
        }
        e->first_feature[j] = (int32_t) nf;
        if (p->kind[j] != S_COL_CATEGORICAL) {
            nf++;
            continue;
        }
        s_strtab_t *t = &p->tabs[j];
        e->categorical[j] = true;
        e->n_categories[j] = t->n;
        if (!(e->categories[j] = s_strtab_sorted(t, rank))) {
            rc = MS_ERR_NOMEM;
            goto fail;
        }
        for (int64_t r = 0; r < p->rows; r++) {
            uint32_t *cell = &p->cells[r * n + j];
            if (*cell != S_ID_MISSING)
                *cell = rank[*cell];
        }
        nf += e->n_categories[j];
    }
    if (nf > MS_DATASET_MAX_FEATURES || nf < 1) {
        rc = ms_diag_set_code(p->diag, MS_ERR_DATASET, p->path,
                              nf < 1 ? "no feature columns: every categorical "
                                       "column is empty"
                                     : "one-hot encoding gives %lld features, "
                                       "more than %d",
                              (long long) nf, MS_DATASET_MAX_FEATURES);
        goto fail;
    }
    if ((rc = s_encoding_features(e, nf)) != MS_OK)
        goto fail;
    free(rank);
    *out = e;
    return MS_OK;
fail:
    if (rc == MS_ERR_NOMEM)
        ms_diag_set_code(p->diag, rc, p->path, "out of memory");
    free(rank);
    s_encoding_free(e);
    return rc;
}

//  --------------------------------------------------------------------------
//  Set the fills of e from the training rows idx[0 .. n) of p (idx NULL:
//  all): 0, or the mean of each feature over the rows where it is
//  present. Returns MS_OK, MS_ERR_DATASET (a column with no value to take
//  a mean of) or MS_ERR_NOMEM.

static int
s_encoding_fill(const s_parse_t *p, ms_dataset_encoding_t *e,
                const int64_t *idx, int64_t n)
{
    if (p->o->missing != MS_DATASET_MISSING_MEAN)
        return MS_OK; // fills stay 0
    int32_t nc = p->n_cols;
    double *sum = calloc((size_t) e->n_features, sizeof *sum);
    int64_t *count = calloc((size_t) nc, sizeof *count);
    if (!sum || !count) {
        free(sum);
        free(count);
        return ms_diag_set_code(p->diag, MS_ERR_NOMEM, p->path,
                                "out of memory");
    }
    for (int64_t i = 0; i < n; i++) {
        const uint32_t *row = p->cells + (idx ? idx[i] : i) * nc;
        for (int32_t j = 0; j < nc; j++) {
            int32_t f = e->first_feature[j];
            if (f < 0)
                continue;
            if (e->categorical[j]) {
                if (row[j] == S_ID_MISSING)
                    continue;
                sum[f + (int32_t) row[j]] += 1.0;
                count[j]++;
                continue;
            }
            float v;
            memcpy(&v, &row[j], sizeof v);
            if (isnan(v))
                continue;
            sum[f] += v;
            count[j]++;
        }
    }
    int rc = MS_OK;
    for (int32_t j = 0; j < nc && rc == MS_OK; j++) {
        int32_t f = e->first_feature[j];
        if (f < 0)
            continue;
        if (count[j] == 0) {
            rc = ms_diag_set_code(p->diag, MS_ERR_DATASET, p->path,
                                  "column \"%s\": every value of the training "
                                  "rows is missing, there is no mean to fill "
                                  "with",
                                  e->col_names[j]);
            break;
        }
        int32_t k = e->categorical[j] ? (int32_t) e->n_categories[j] : 1;
        for (int32_t q = 0; q < k; q++)
            e->fill[f + q] = (float) (sum[f + q] / (double) count[j]);
    }
    free(sum);
    free(count);
    return rc;
}

//  --------------------------------------------------------------------------
//  Set the label (or target) of row i of d from row r of p: id is the
//  label cell (a class rank for string labels). Parsing checked the value
//  (s_label_field), so nothing can fail here.

static void
s_set_label(const s_parse_t *p, const ms_dataset_encoding_t *e, int64_t r,
            uint32_t id, ms_dataset_t *d, int64_t i)
{
    if (p->unlabelled)
        return; // no label column: the caller drops the arrays
    if (e->string_labels)
        d->labels[i] = (int32_t) id;
    else if (d->labels)
        d->labels[i] = (int32_t) p->label_num[r];
    else
        d->targets[i] = p->label_num[r];
}

//  --------------------------------------------------------------------------
//  Build a dataset of the rows idx[0 .. n) (idx NULL: all) of p with the
//  encoding e (p's cells hold e's ranks). Caller owns *out.

static int
s_materialize(const s_parse_t *p, ms_dataset_encoding_t *e, const int64_t *idx,
              int64_t n, ms_dataset_t **out)
{
    *out = NULL;
    ms_dataset_t *d = ms_dataset_new(n, e->n_features, e->n_classes);
    if (!d || (n > 0 && !d->x)) {
        ms_dataset_destroy(&d);
        return ms_diag_set_code(p->diag, MS_ERR_NOMEM, p->path,
                                "out of memory for %lld rows of %d features",
                                (long long) n, (int) e->n_features);
    }
    ms_dataset_owner_t *owner = d->owner_;
    owner->encoding = ms_dataset_encoding_ref(e);
    d->class_names = (const char *const *) e->class_names;
    int32_t nc = p->n_cols;
    for (int64_t i = 0; i < n; i++) {
        int64_t r = idx ? idx[i] : i;
        const uint32_t *row = p->cells + r * nc;
        float *x = d->x + i * e->n_features;
        for (int32_t j = 0; j < nc; j++) {
            int32_t f = e->first_feature[j];
            if (f < 0)
                continue;
            if (e->categorical[j]) {
                uint32_t k = e->n_categories[j];
                if (row[j] == S_ID_MISSING)
                    memcpy(x + f, e->fill + f, k * sizeof *x);
                else
                    x[f + (int32_t) row[j]] = 1.0f; // the rest stays 0
                continue;
            }
            float v;
            memcpy(&v, &row[j], sizeof v);
            x[f] = isnan(v) ? e->fill[f] : v;
        }
        s_set_label(p, e, r, row[p->label_col], d, i);
    }
    *out = d;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Whether an encoding one-hot encodes any column.

static bool
s_has_categorical(const ms_dataset_encoding_t *e)
{
    for (int32_t j = 0; j < e->n_cols; j++)
        if (e->categorical[j])
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  s_materialize for every row of p when no column is categorical: the
//  cells become the feature array in place (a numeric cell is a float
//  already; the label column is dropped, missing values filled), so the
//  peak is the dataset once, not twice. p gives up its cells. Row i's
//  features land at or before its own cells and after every earlier
//  row's, and a cell is read before anything is written over it, so the
//  compaction is safe front to back. Caller owns *out.

static int
s_materialize_in_place(s_parse_t *p, ms_dataset_encoding_t *e,
                       ms_dataset_t **out)
{
    *out = NULL;
    int64_t n = p->rows;
    int32_t nc = p->n_cols, nf = e->n_features;
    ms_dataset_t *d = ms_dataset_new(0, nf, e->n_classes);
    if (!d)
        return ms_diag_set_code(p->diag, MS_ERR_NOMEM, p->path,
                                "out of memory");
    size_t nl = (size_t) (n > 0 ? n : 1);
    if (e->n_classes)
        d->labels = malloc(nl * sizeof *d->labels);
    else
        d->targets = malloc(nl * sizeof *d->targets);
    if (!d->labels && !d->targets) {
        ms_dataset_destroy(&d);
        return ms_diag_set_code(p->diag, MS_ERR_NOMEM, p->path,
                                "out of memory");
    }
    //  Every access to the shared slots is a memcpy (a char access), so
    //  no type-based alias rule lets the compiler move a float store
    //  above the read of a cell it overwrites.
    unsigned char *slots = (unsigned char *) p->cells;
    for (int64_t r = 0; r < n; r++) {
        const unsigned char *row = slots + (size_t) (r * nc) * 4;
        uint32_t id;
        memcpy(&id, row + (size_t) p->label_col * 4, sizeof id);
        s_set_label(p, e, r, id, d, r);
        for (int32_t j = 0; j < nc; j++) {
            int32_t f = e->first_feature[j];
            if (f < 0)
                continue;
            float v;
            memcpy(&v, row + (size_t) j * 4, sizeof v);
            if (isnan(v))
                v = e->fill[f];
            memcpy(slots + (size_t) (r * nf + f) * 4, &v, sizeof v);
        }
    }
    float *shrunk = realloc(slots, (size_t) nl * (size_t) nf * sizeof(float));
    d->x = shrunk ? shrunk : (float *) slots;
    p->cells = NULL;
    p->cap_rows = 0;
    d->n_samples = n;
    ms_dataset_owner_t *owner = d->owner_;
    owner->encoding = ms_dataset_encoding_ref(e);
    d->class_names = (const char *const *) e->class_names;
    *out = d;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Parse path with options o (and the training encoding ref, or NULL).

static int
s_parse(s_parse_t *p, const char *path, const ms_dataset_csv_options_t *o,
        const ms_dataset_encoding_t *ref, ms_diag_t *diag)
{
    memset(p, 0, sizeof *p);
    p->path = path;
    p->diag = diag;
    p->o = o;
    p->ref = ref;
    return s_parse_file(p);
}

//  --------------------------------------------------------------------------
//  Check the options.

static int
s_check_options(const ms_dataset_csv_options_t *o, ms_diag_t *diag)
{
    if (o->split != 0 && !(o->split > 0 && o->split < 1))
        return ms_diag_set(diag, "split", "%g is outside (0, 1)", o->split);
    if ((unsigned) o->missing > MS_DATASET_MISSING_MEAN)
        return ms_diag_set(diag, "missing", "must be error, zero or mean");
    if (o->n_categorical < 0 || (o->n_categorical > 0 && !o->categorical))
        return ms_diag_set(diag, "categorical", "bad list");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Load a training and a test file, or split one.

int
ms_dataset_load_csv_files(const char *train_path, const char *test_path,
                          const ms_dataset_csv_options_t *opts,
                          ms_dataset_t **train, ms_dataset_t **test,
                          ms_diag_t *diag)
{
    *train = NULL;
    if (test)
        *test = NULL;
    ms_dataset_csv_options_t defaults;
    if (!opts) {
        ms_dataset_csv_options_init(&defaults);
        opts = &defaults;
    }
    int rc = s_check_options(opts, diag);
    if (rc)
        return rc;
    if (opts->split > 0 && !test)
        return ms_diag_set(diag, "split", "a split needs both results");
    s_parse_t p, q;
    memset(&q, 0, sizeof q);
    ms_dataset_encoding_t *e = NULL;
    int64_t *perm = NULL;
    rc = s_parse(&p, train_path, opts, NULL, diag);
    if (rc == MS_OK)
        rc = s_encode(&p, &e);
    if (rc)
        goto done;
    if (opts->split > 0) {
        int64_t n = p.rows;
        int64_t n_test = (int64_t) llround((double) n * opts->split);
        if (n_test < 1 || n - n_test < 1) {
            rc = ms_diag_set_code(
                diag, MS_ERR_DATASET, train_path,
                "split %g of %lld rows leaves %s", opts->split, (long long) n,
                n_test < 1 ? "no test row" : "no training row");
            goto done;
        }
        perm = malloc((size_t) n * sizeof *perm);
        if (!perm) {
            rc = ms_diag_set_code(diag, MS_ERR_NOMEM, train_path,
                                  "out of memory");
            goto done;
        }
        for (int64_t i = 0; i < n; i++)
            perm[i] = i;
        ms_rng_t rng;
        ms_rng_seed(&rng, opts->split_seed, MS_DATASET_RNG_STREAM_CSV_SPLIT);
        ms_rng_shuffle_i64(&rng, perm, n);
        rc = s_encoding_fill(&p, e, perm, n - n_test);
        if (rc == MS_OK)
            rc = s_materialize(&p, e, perm, n - n_test, train);
        if (rc == MS_OK)
            rc = s_materialize(&p, e, perm + (n - n_test), n_test, test);
        goto done;
    }
    rc = s_encoding_fill(&p, e, NULL, p.rows);
    if (rc == MS_OK && !s_has_categorical(e))
        rc = s_materialize_in_place(&p, e, train);
    else if (rc == MS_OK)
        rc = s_materialize(&p, e, NULL, p.rows, train);
    s_parse_free(&p); // the training cells are done with
    if (rc == MS_OK && test) {
        rc = s_parse(&q, test_path, opts, e, diag);
        if (rc == MS_OK && !s_has_categorical(e))
            rc = s_materialize_in_place(&q, e, test);
        else if (rc == MS_OK)
            rc = s_materialize(&q, e, NULL, q.rows, test);
    }
done:
    s_parse_free(&p);
    s_parse_free(&q);
    free(perm);
    ms_dataset_encoding_release(&e);
    if (rc) {
        ms_dataset_destroy(train);
        if (test)
            ms_dataset_destroy(test);
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  Load a file the way like was loaded.

int
ms_dataset_load_csv_like(ms_dataset_t **out, const char *path,
                         const ms_dataset_csv_options_t *opts,
                         const ms_dataset_t *like, ms_diag_t *diag)
{
    *out = NULL;
    ms_dataset_encoding_t *e = (ms_dataset_encoding_t *) s_encoding_of(like);
    if (!e)
        return ms_diag_set(diag, path, "the reference dataset is not a CSV");
    ms_dataset_csv_options_t o;
    if (opts)
        o = *opts;
    else {
        ms_dataset_csv_options_init(&o);
        o.missing = e->missing; // the rule of training
    }
    o.split = 0;
    o.label_index = e->label_col;
    o.categorical = NULL; // taken from e
    o.n_categorical = 0;
    int rc = s_check_options(&o, diag);
    if (rc)
        return rc;
    s_parse_t q;
    memset(&q, 0, sizeof q);
    q.path = path;
    q.diag = diag;
    q.o = &o;
    q.ref = e;
    q.unlabelled_ok = true;
    rc = s_parse_file(&q);
    if (rc == MS_OK) //  the header matched e's, so kinds follow e
        rc = s_materialize(&q, e, NULL, q.rows, out);
    if (rc == MS_OK && q.unlabelled) {
        free((*out)->labels);
        free((*out)->targets);
        (*out)->labels = NULL;
        (*out)->targets = NULL;
        (*out)->n_classes = 0; // unlabelled rows, as IDX images alone
    }
    s_parse_free(&q);
    return rc;
}

//  --------------------------------------------------------------------------
//  The schema of a CSV dataset.

int
ms_dataset_csv_schema(const ms_dataset_t *self, ms_dataset_csv_schema_t *out)
{
    memset(out, 0, sizeof *out);
    const ms_dataset_encoding_t *e = s_encoding_of(self);
    if (!e)
        return MS_ERR_INVALID;
    out->n_columns = e->n_cols;
    out->column_names = (const char *const *) e->col_names;
    out->label_column = e->label_col;
    out->n_classes = e->n_classes;
    out->class_names = (const char *const *) e->class_names;
    out->categorical = e->categorical;
    out->n_categories = e->n_categories;
    out->categories = (const char *const *const *) e->categories;
    out->n_features = e->n_features;
    out->fill = e->fill;
    out->missing = e->missing;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Copy n strings (each non-NULL, sorted and distinct when sorted is
//  set); NULL on a bad list or out of memory (*bad says which).

static char **
s_copy_names(const char *const *names, uint32_t n, bool sorted, bool *bad)
{
    *bad = false;
    if (n && !names) {
        *bad = true;
        return NULL;
    }
    char **copy = calloc(n ? n : 1, sizeof *copy);
    for (uint32_t i = 0; copy && i < n; i++) {
        if (!names[i] || (sorted && i && strcmp(names[i - 1], names[i]) >= 0))
            *bad = true;
        else
            copy[i] = strdup(names[i]);
        if (!copy[i]) {
            for (uint32_t k = 0; k < i; k++)
                free(copy[k]);
            free(copy);
            return NULL;
        }
    }
    return copy;
}

//  --------------------------------------------------------------------------
//  An empty dataset that carries a schema.

int
ms_dataset_csv_reference_new(ms_dataset_t **out,
                             const ms_dataset_csv_schema_t *schema,
                             ms_diag_t *diag)
{
    *out = NULL;
    const ms_dataset_csv_schema_t *sc = schema;
    int32_t n = sc->n_columns;
    if (n < 2 || n > MS_DATASET_MAX_FEATURES || sc->label_column < 0 ||
        sc->label_column >= n || !sc->column_names)
        return ms_diag_set(diag, "schema", "bad columns (%d, label column %d)",
                           (int) n, (int) sc->label_column);
    if (sc->missing < MS_DATASET_MISSING_ERROR ||
        sc->missing > MS_DATASET_MISSING_MEAN)
        return ms_diag_set(diag, "schema.missing", "unknown rule %d",
                           (int) sc->missing);
    if (sc->n_classes < 0 || sc->n_classes > MS_DATASET_MAX_CLASSES ||
        sc->n_classes == 1 || (sc->class_names && sc->n_classes < 2))
        return ms_diag_set(diag, "schema.classes", "bad class count %d",
                           (int) sc->n_classes);
    ms_dataset_encoding_t *e = calloc(1, sizeof *e);
    if (!e)
        return MS_ERR_NOMEM;
    atomic_init(&e->refs, 1);
    e->n_cols = n;
    e->label_col = sc->label_column;
    e->missing = sc->missing;
    e->n_classes = sc->n_classes;
    e->string_labels = sc->class_names != NULL;
    e->categorical = calloc((size_t) n, sizeof *e->categorical);
    e->n_categories = calloc((size_t) n, sizeof *e->n_categories);
    e->categories = calloc((size_t) n, sizeof *e->categories);
    e->first_feature = calloc((size_t) n, sizeof *e->first_feature);
    int rc = MS_OK;
    bool bad = false;
    if (!e->categorical || !e->n_categories || !e->categories ||
        !e->first_feature) {
        rc = MS_ERR_NOMEM;
        goto fail;
    }
    e->col_names = s_copy_names(sc->column_names, (uint32_t) n, false, &bad);
    if (bad || !e->col_names) {
        rc = bad ? ms_diag_set(diag, "schema.columns", "a NULL name")
                 : MS_ERR_NOMEM;
        goto fail;
    }
    if (e->string_labels) {
        e->class_names =
            s_copy_names(sc->class_names, (uint32_t) sc->n_classes, true, &bad);
        if (bad || !e->class_names) {
            rc = bad ? ms_diag_set(diag, "schema.classes",
                                   "class names must be distinct and "
                                   "sorted by byte value")
                     : MS_ERR_NOMEM;
            goto fail;
        }
    }
    int64_t nf = 0;
    for (int32_t j = 0; j < n; j++) {
        if (j == e->label_col) {
            e->first_feature[j] = -1;
            continue;
        }
        e->first_feature[j] = (int32_t) nf;
        if (!sc->categorical || !sc->categorical[j]) {
            nf++;
            continue;
        }
        uint32_t k = sc->n_categories ? sc->n_categories[j] : 0;
        if (k > MS_DATASET_MAX_CATEGORIES || !sc->categories) {
            rc = ms_diag_set(diag, "schema.categories", "column %d: bad list",
                             (int) j);
            goto fail;
        }
        e->categorical[j] = true;
        e->n_categories[j] = k;
        e->categories[j] = s_copy_names(sc->categories[j], k, true, &bad);
        if (bad || !e->categories[j]) {
            rc = bad ? ms_diag_set(diag, "schema.categories",
                                   "column %d: categories must be distinct "
                                   "and sorted by byte value",
                                   (int) j)
                     : MS_ERR_NOMEM;
            goto fail;
        }
        nf += k;
    }
    if (nf < 1 || nf > MS_DATASET_MAX_FEATURES || nf != sc->n_features) {
        rc = ms_diag_set(diag, "schema.features",
                         "%d features, the columns give %lld",
                         (int) sc->n_features, (long long) nf);
        goto fail;
    }
    if ((rc = s_encoding_features(e, nf)) != MS_OK)
        goto fail;
    for (int64_t f = 0; f < nf; f++) {
        float v = sc->fill ? sc->fill[f] : 0.0f;
        if (!isfinite(v)) {
            rc = ms_diag_set(diag, "schema.fill", "feature %lld: not finite",
                             (long long) f);
            goto fail;
        }
        e->fill[f] = v;
    }
    ms_dataset_t *d = ms_dataset_new(0, e->n_features, e->n_classes);
    if (!d) {
        rc = MS_ERR_NOMEM;
        goto fail;
    }
    ms_dataset_owner_t *owner = d->owner_;
    owner->encoding = e;
    d->class_names = (const char *const *) e->class_names;
    *out = d;
    return MS_OK;
fail:
    if (rc == MS_ERR_NOMEM)
        ms_diag_set_code(diag, rc, "schema", "out of memory");
    s_encoding_free(e);
    return rc;
}

//  --------------------------------------------------------------------------
//  Load one CSV file with a label column.

int
ms_dataset_load_csv(ms_dataset_t **out, const char *path,
                    const char *label_column, ms_diag_t *diag)
{
    ms_dataset_csv_options_t o;
    ms_dataset_csv_options_init(&o);
    o.label = label_column;
    return ms_dataset_load_csv_files(path, NULL, &o, out, NULL, diag);
}
