/* metrics_retry.h: /metrics for retry budgets (metrics_retry.c). */
#ifndef SLUICE_SERVER_ADMIN_METRICS_RETRY_H
#define SLUICE_SERVER_ADMIN_METRICS_RETRY_H

#include "util/buf.h"

struct sl__policy_set;
/* Appends sluice_retry_budget_total{policy,outcome=first|allowed|refused}
 * and sluice_retry_budget_fallback_total{policy,fallback}; nothing when no
 * policy of set has a retry_budget. */
void sl__metrics_retry(const struct sl__policy_set *set, sl__buf *out);

#endif
