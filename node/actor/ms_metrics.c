/*  =========================================================================
    ms_metrics - the node's counters, each declared once

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The table of ms_metrics.h as data, and the two writers generated from
    it: the status page's pool_counters and the /metrics families. Both
    walk the same array in the same order, so the page prints the
    families in the order of the status keys (as the map in ms_api.c did
    before it, which read the keys in the order the node wrote them).
*/
#include "ms_metrics.h"

#include "ms_err.h"

#include <stdbool.h>

//  A line of the list as data: XF's, and X's with its family spelled out.
#define S_ENTRY_F(field, g, family, t, label, value, help)                     \
    {#field, MS_METRICS_GROUP_##g,         family, MS_PROM_##t, label, value,  \
     help,   offsetof(ms_metrics_t, field)},
#define S_ENTRY(field, g, t, help)                                             \
    S_ENTRY_F(field, g, "meshsweep_" #field, t, NULL, NULL, help)

static const ms_metrics_entry_t s_entries[] = {
    MS_METRICS_LIST(S_ENTRY, S_ENTRY_F)};

#undef S_ENTRY
#undef S_ENTRY_F

//  --------------------------------------------------------------------------
//  The list and its length.

const ms_metrics_entry_t *
ms_metrics_entries(size_t *n)
{
    *n = sizeof s_entries / sizeof s_entries[0];
    return s_entries;
}

//  --------------------------------------------------------------------------
//  The value of one line.

uint64_t
ms_metrics_value(const ms_metrics_t *self, const ms_metrics_entry_t *entry)
{
    const uint64_t *v =
        (const uint64_t *) (const void *) ((const char *) self + entry->offset);
    return *v;
}

//  --------------------------------------------------------------------------
//  The status page's pool_counters.

json_t *
ms_metrics_status_json(const ms_metrics_t *self, unsigned groups)
{
    json_t *c = json_object();
    for (size_t i = 0; c && i < sizeof s_entries / sizeof s_entries[0]; i++) {
        const ms_metrics_entry_t *e = &s_entries[i];
        if (!(e->group & groups))
            continue;
        if (json_object_set_new(
                c, e->key,
                json_integer((json_int_t) ms_metrics_value(self, e))) != 0) {
            json_decref(c);
            c = NULL;
        }
    }
    return c;
}

//  --------------------------------------------------------------------------
//  The /metrics families, from a status page's pool_counters.

int
ms_metrics_prom(const json_t *pool_counters, ms_prom_t *p)
{
    int rc = MS_OK;
    for (size_t i = 0; i < sizeof s_entries / sizeof s_entries[0]; i++) {
        const ms_metrics_entry_t *e = &s_entries[i];
        const json_t *v = json_object_get(pool_counters, e->key);
        if (!e->family || !json_is_number(v))
            continue;
        double value = json_number_value(v);
        int r = ms_prom_family(p, e->family, e->type, e->help);
        if (r == MS_OK)
            r = e->label ? ms_prom_sample(p, e->family, value, e->label,
                                          e->label_value, NULL)
                         : ms_prom_sample(p, e->family, value, NULL);
        if (r != MS_OK && rc == MS_OK)
            rc = r;
    }
    return rc;
}
