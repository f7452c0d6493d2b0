/*  =========================================================================
    ms_dataset_internal - what ms_dataset.c and ms_dataset_csv.c share:
    the private record behind ms_dataset_t.owner_

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#ifndef MS_DATASET_INTERNAL_H
#define MS_DATASET_INTERNAL_H

#include <stdbool.h>

//  How a CSV file became numbers (ms_dataset_csv.c): shared, reference
//  counted, by every dataset loaded or split from one training file.
typedef struct ms_dataset_encoding ms_dataset_encoding_t;

//  Private record behind ms_dataset_t.owner_.
typedef struct {
    bool byte_range;                 // values are raw 0..255 bytes (IDX)
    ms_dataset_encoding_t *encoding; // CSV: its encoding, or NULL
} ms_dataset_owner_t;

//  Take one more reference to an encoding (NULL-safe); returns it.
ms_dataset_encoding_t *ms_dataset_encoding_ref(ms_dataset_encoding_t *self);

//  Drop a reference; frees the encoding with the last one. NULL-safe;
//  nulls *self_p.
void ms_dataset_encoding_release(ms_dataset_encoding_t **self_p);

//  The class names of an encoding (NULL: integer labels or no encoding).
const char *const *
ms_dataset_encoding_class_names(const ms_dataset_encoding_t *self);

#endif
