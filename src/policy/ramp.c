/* ramp.c: the server's ramp start and its restarts (ramp.h). */
#include "policy/ramp.h"

#include <stdatomic.h>

static _Atomic int64_t started;
static atomic_uint_fast64_t restarts[SL__RAMP_REASONS];

void sl__ramp_restart(int64_t now, sl__ramp_reason why) {
    int64_t cur = atomic_load(&started);
    while (cur < now && !atomic_compare_exchange_weak(&started, &cur, now)) {
    }
    if (why < SL__RAMP_REASONS) atomic_fetch_add(&restarts[why], 1);
}

int64_t sl__ramp_started(void) {
    return atomic_load_explicit(&started, memory_order_relaxed);
}

uint64_t sl__ramp_restarts(sl__ramp_reason why) {
    return why < SL__RAMP_REASONS ? atomic_load(&restarts[why]) : 0;
}

const char *sl__ramp_reason_name(sl__ramp_reason why) {
    static const char *const names[SL__RAMP_REASONS] = {"start", "recovery", "admin"};
    return why < SL__RAMP_REASONS ? names[why] : "unknown";
}
