/* metrics_lease.h: /metrics for concurrency limits (metrics_lease.c). */
#ifndef SLUICE_SERVER_ADMIN_METRICS_LEASE_H
#define SLUICE_SERVER_ADMIN_METRICS_LEASE_H

#include "util/buf.h"

struct sl__policy_set;

/* Appends the lease families for set's concurrency limits (nothing when
 * there are none or set is NULL). */
void sl__metrics_leases(const struct sl__policy_set *set, sl__buf *out);

#endif
