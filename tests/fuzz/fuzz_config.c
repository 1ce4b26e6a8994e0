/* fuzz_config.c: libFuzzer target for the config loader (src/policy/config.c):
 * arbitrary bytes as a YAML config. It must never crash, leak or overflow,
 * and its answer must be consistent: an accepted config holds only valid
 * policies with unique, well-formed names; a refused one has no config and
 * at least one NUL-terminated "source:..." message.
 *
 * The fuzz build instruments every library with -fsanitize=fuzzer-no-link, so
 * the loader linked from sluice_server is coverage-guided. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/config.h"
#include "sluice/sluice.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_accepted(const sl__config *c) {
    if (c->npolicies > SL__CONFIG_MAX_POLICIES) abort();
    if (c->workers > 256) abort();
    for (size_t i = 0; i < c->npolicies; i++) {
        const sl__policy_config *pc = &c->policies[i];
        size_t n = strnlen(pc->name, sizeof pc->name);
        if (n == 0 || n > SL__POLICY_NAME_MAX) abort();
        if (strspn(pc->name, "abcdefghijklmnopqrstuvwxyz0123456789_.-") != n) abort();
        if (sl_params_validate(&pc->params) != SL_OK) abort();
        if (sl__config_policy(c, pc->name, n) != pc) abort(); /* unique */
        if (pc->line < 1) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static sl__config_errors errs;
    sl__config *c = NULL;
    int rc = sl__config_parse((const char *)data, size, "fuzz.yaml", &c, &errs);
    if (rc == 0) {
        if (!c || errs.n != 0) abort();
        check_accepted(c);
        sl__config_free(c);
        return 0;
    }
    if ((rc != SL_EPARSE && rc != SL_EINVAL && rc != SL_ENOMEM) || c || errs.n == 0) abort();
    size_t stored = errs.n < SL__CONFIG_MAX_ERRORS ? errs.n : SL__CONFIG_MAX_ERRORS;
    for (size_t i = 0; i < stored; i++) {
        if (!memchr(errs.msg[i], '\0', sizeof errs.msg[i])) abort();
        if (strncmp(errs.msg[i], "fuzz.yaml:", 10) != 0) abort();
    }
    return 0;
}
