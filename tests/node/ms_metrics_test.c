/*  =========================================================================
    ms_metrics_test - the counter table: every line on the status page and
    on /metrics, no status key or sample twice, each family documented

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_metrics.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  The status keys no family prints on their own: their figures come
//  labelled from the status page's "metrics" (gossip by direction and
//  type, refusals and re-evaluations by reason or outcome) or from the
//  store's own counters (store commits), so /metrics has them once.
static const char *s_unprinted[] = {
    "store_commits_total",
    "gossip_messages_total",
    "gossip_bytes_total",
    "admission_refused_total",
    "rejected_messages_total",
    "blocks_rejected_total",
    "reevaluations_published_total",
    "reevaluations_failed_total",
};

//  --------------------------------------------------------------------------
//  A metrics value with each line's value distinct: line i holds 1000 + i.

static void
s_fill(ms_metrics_t *m)
{
    size_t n;
    const ms_metrics_entry_t *e = ms_metrics_entries(&n);
    memset(m, 0, sizeof *m);
    for (size_t i = 0; i < n; i++)
        *(uint64_t *) (void *) ((char *) m + e[i].offset) = 1000 + i;
}

//  --------------------------------------------------------------------------
//  Both pages of a filled ms_metrics_t with the groups GROUPS: *pc gets
//  the status page's pool_counters, the result is the /metrics text
//  written from it (both the caller's).

static char *
s_pages(unsigned groups, json_t **pc)
{
    ms_metrics_t m;
    s_fill(&m);
    *pc = ms_metrics_status_json(&m, groups);
    assert_non_null(*pc);
    ms_prom_t *p = ms_prom_new();
    assert_non_null(p);
    assert_int_equal(ms_metrics_prom(*pc, p), MS_OK);
    char *text = ms_prom_text(p, NULL);
    assert_non_null(text);
    ms_prom_destroy(&p);
    return text;
}

//  --------------------------------------------------------------------------
//  The sample line of line E with value V as ms_prom writes it.

static void
s_sample_line(const ms_metrics_entry_t *e, uint64_t v, char *out, size_t size)
{
    if (e->label)
        snprintf(out, size, "\n%s{%s=\"%s\"} %" PRIu64 "\n", e->family,
                 e->label, e->label_value, v);
    else
        snprintf(out, size, "\n%s %" PRIu64 "\n", e->family, v);
}

//  --------------------------------------------------------------------------
//  No status key twice; the struct has one value per line.

static void
test_keys_unique(void **state)
{
    (void) state;
    size_t n;
    const ms_metrics_entry_t *e = ms_metrics_entries(&n);
    assert_true(n > 0);
    assert_int_equal(sizeof(ms_metrics_t), n * sizeof(uint64_t));
    for (size_t i = 0; i < n; i++) {
        assert_non_null(e[i].key);
        assert_true(e[i].offset == i * sizeof(uint64_t));
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(e[i].key, e[j].key) == 0)
                fail_msg("status key %s twice", e[i].key);
    }
}

//  --------------------------------------------------------------------------
//  No sample twice (a family's lines differ in their label value), one
//  type and one help per family, counters and only counters end in
//  _total, and a line without a family is one of s_unprinted.

static void
test_families_consistent(void **state)
{
    (void) state;
    size_t n;
    const ms_metrics_entry_t *e = ms_metrics_entries(&n);
    size_t n_unprinted = 0;
    for (size_t i = 0; i < n; i++) {
        if (!e[i].family) {
            bool known = false;
            for (size_t k = 0; k < sizeof s_unprinted / sizeof *s_unprinted;
                 k++)
                known |= strcmp(s_unprinted[k], e[i].key) == 0;
            if (!known)
                fail_msg("%s: no family prints it", e[i].key);
            assert_null(e[i].help);
            n_unprinted++;
            continue;
        }
        assert_non_null(e[i].help);
        assert_true((e[i].label == NULL) == (e[i].label_value == NULL));
        size_t len = strlen(e[i].family);
        bool total = len > 6 && strcmp(e[i].family + len - 6, "_total") == 0;
        if (total != (e[i].type == MS_PROM_COUNTER))
            fail_msg("%s: a counter's name ends in _total, a gauge's not",
                     e[i].family);
        for (size_t j = i + 1; j < n; j++) {
            if (!e[j].family || strcmp(e[i].family, e[j].family) != 0)
                continue;
            if (e[i].type != e[j].type || strcmp(e[i].help, e[j].help) != 0)
                fail_msg("%s: two types or helps", e[i].family);
            if (!e[i].label || !e[j].label ||
                strcmp(e[i].label, e[j].label) != 0 ||
                strcmp(e[i].label_value, e[j].label_value) == 0)
                fail_msg("%s: the same sample twice (%s, %s)", e[i].family,
                         e[i].key, e[j].key);
        }
    }
    assert_int_equal(n_unprinted, sizeof s_unprinted / sizeof *s_unprinted);
}

//  --------------------------------------------------------------------------
//  Every line is on the status page with its value, in the list's order,
//  and every line with a family is on /metrics with the same value.

static void
test_every_line_in_both_outputs(void **state)
{
    (void) state;
    size_t n;
    const ms_metrics_entry_t *e = ms_metrics_entries(&n);
    json_t *pc;
    char *text = s_pages(MS_METRICS_GROUP_ALL, &pc);
    assert_int_equal(json_object_size(pc), n);
    ms_metrics_t m;
    s_fill(&m);
    size_t i = 0;
    const char *key;
    json_t *value;
    json_object_foreach(pc, key, value)
    {
        assert_string_equal(key, e[i].key);
        assert_true(json_is_integer(value));
        assert_int_equal(json_integer_value(value), 1000 + i);
        assert_int_equal(ms_metrics_value(&m, &e[i]), 1000 + i);
        i++;
    }
    for (i = 0; i < n; i++) {
        if (!e[i].family)
            continue;
        char line[256];
        s_sample_line(&e[i], 1000 + i, line, sizeof line);
        if (!strstr(text, line))
            fail_msg("%s: no sample line '%s'", e[i].key, line + 1);
        snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s %s\n", e[i].family,
                 e[i].help, e[i].family,
                 e[i].type == MS_PROM_COUNTER ? "counter" : "gauge");
        if (!strstr(text, line))
            fail_msg("%s: no HELP and TYPE '%s'", e[i].family, line);
    }
    free(text);
    json_decref(pc);
}

//  --------------------------------------------------------------------------
//  A group left out is on neither page.

static void
test_groups(void **state)
{
    (void) state;
    size_t n;
    const ms_metrics_entry_t *e = ms_metrics_entries(&n);
    json_t *pc;
    char *text = s_pages(MS_METRICS_GROUP_NODE, &pc);
    size_t n_node = 0;
    for (size_t i = 0; i < n; i++) {
        bool node = e[i].group == MS_METRICS_GROUP_NODE;
        n_node += node;
        assert_true((json_object_get(pc, e[i].key) != NULL) == node);
        if (e[i].family && !node) {
            char line[256];
            s_sample_line(&e[i], 1000 + i, line, sizeof line);
            assert_null(strstr(text, line));
        }
    }
    assert_true(n_node > 0 && n_node < n);
    assert_int_equal(json_object_size(pc), n_node);
    free(text);
    json_decref(pc);
}

//  --------------------------------------------------------------------------
//  docs/METRICS.md names every family.

static void
test_families_documented(void **state)
{
    (void) state;
    const char *src = getenv("MESHSWEEP_SOURCE_DIR");
    if (!src)
        skip();
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/METRICS.md", src);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char doc[1 << 20];
    size_t len = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[len] = 0;
    size_t n;
    const ms_metrics_entry_t *e = ms_metrics_entries(&n);
    for (size_t i = 0; i < n; i++) {
        if (!e[i].family)
            continue;
        char name[160];
        snprintf(name, sizeof name, "`%s`", e[i].family);
        if (!strstr(doc, name))
            fail_msg("docs/METRICS.md does not name %s", e[i].family);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys_unique),
        cmocka_unit_test(test_families_consistent),
        cmocka_unit_test(test_every_line_in_both_outputs),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_families_documented),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
