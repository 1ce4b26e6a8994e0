/* config_check.h: the config check behind `sluiced --check-config FILE` and
 * `sluice check-config FILE` (DESIGN.md section 2): one function, so both
 * say the same thing, and it runs what sluiced's startup runs on a config
 * (the loader with every check, then building the policies, tier variants,
 * rules and Envoy domains), short of binding the listeners. */
#ifndef SLUICE_POLICY_CONFIG_CHECK_H
#define SLUICE_POLICY_CONFIG_CHECK_H

#include <stdio.h>

#include "policy/config.h"

/* Prints "PATH: ok (N policies)" on out and returns 0, or prints every
 * error on err, one per line ("file:line: field: message"), and returns 1
 * (the exit status). */
int sl__config_check_file(const char *path, FILE *out, FILE *err);

/* Prints the stored errors of a failed load, one per line, and a count of
 * those that were not stored. */
void sl__config_print_errors(const sl__config_errors *e, FILE *err);

#endif
