/*  =========================================================================
    ms_grace - the startup grace: no claims blind, and none while the
    first catch-up runs

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    See ms_grace.h.
*/
#include "ms_grace.h"

#include <assert.h>
#include <stdlib.h>

struct ms_grace {
    int64_t until;  // monotonic ms: no claim before (0: none)
    int64_t limit;  // monotonic ms: a catch-up stops holding it
    bool caught_up; // the grace and the first catch-up are over
};

ms_grace_t *
ms_grace_new(void)
{
    return calloc(1, sizeof(ms_grace_t));
}

void
ms_grace_destroy(ms_grace_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free(*self_p);
    *self_p = NULL;
}

void
ms_grace_start(ms_grace_t *self, int64_t now, int64_t grace_ms)
{
    assert(self && grace_ms >= 0);
    self->until = now + grace_ms;
    self->limit = now + MS_GRACE_CATCH_UP_MAX_MS;
}

void
ms_grace_hold(ms_grace_t *self, int64_t now, size_t n_pulls)
{
    assert(self);
    if (self->caught_up)
        return;
    if (n_pulls > 0 && now < self->limit) {
        if (self->until < now + MS_GRACE_CATCH_UP_HOLD_MS)
            self->until = now + MS_GRACE_CATCH_UP_HOLD_MS;
    } else if (now >= self->until) {
        self->caught_up = true;
    }
}

bool
ms_grace_holding(const ms_grace_t *self, int64_t now)
{
    assert(self);
    return now < self->until;
}

bool
ms_grace_caught_up(const ms_grace_t *self)
{
    assert(self);
    return self->caught_up;
}

int64_t
ms_grace_next_deadline(const ms_grace_t *self, int64_t now)
{
    assert(self);
    return self->until > now ? self->until : INT64_MAX;
}
