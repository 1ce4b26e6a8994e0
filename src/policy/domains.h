/* domains.h: envoyproxy/ratelimit rule files (the `domains:` config key): a
 * directory or one file of YAML domains with nested descriptors, loaded
 * unchanged, compiled into a lookup structure with a table per limit. A set
 * is reference counted and swapped on reload like the policy set. */
#ifndef SLUICE_POLICY_DOMAINS_H
#define SLUICE_POLICY_DOMAINS_H

#include <stddef.h>
#include <stdint.h>

#include "policy/config.h"

typedef struct sl_domain_set sl_domain_set;

/* Builds the set for cfg (empty when cfg has no domains); reuses the state of
 * unchanged limits of prev (may be NULL). Returns 0, or -1 with err. */
int sl__domain_set_create(const sl_config *cfg, sl_domain_set *prev, int64_t now,
                          sl_domain_set **out, char *err, size_t errlen);
void sl__domain_set_retain(sl_domain_set *s);
void sl__domain_set_release(sl_domain_set *s);

#endif
