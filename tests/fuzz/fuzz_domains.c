/* fuzz_domains.c: libFuzzer target for envoyproxy/ratelimit rule files
 * (src/policy/domains.c): arbitrary bytes as one rule file, then, when it
 * loads, the compiled set matched against descriptors made from the same
 * bytes (wildcards anywhere in values, share_threshold, quota_mode, the
 * metadata kept as JSON). It must never crash, leak or overflow; a refused
 * file has no rules and at least one message; a match's strings are
 * NUL-terminated and its metadata a JSON object. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/domains.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static sl__config_errors errs;
    errs.n = 0;
    sl__domain_rules *r = NULL;
    int rc = sl__domain_rules_parse((const char *)data, size, "fuzz.yaml", &r, &errs);
    if (rc != 0) {
        if (r || errs.n == 0) abort();
        return 0;
    }
    if (!r) abort();
    sl__domain_set *s = NULL;
    char err[128];
    if (sl__domain_set_build(r, 1u << 20, NULL, 0, &s, err, sizeof err) != 0) {
        sl__domain_rules_free(r);
        return 0;
    }
    sl__domain_rules_free(r);
    /* descriptors from the input: up to 4 entries split at '\n', each
     * "key:value" split at the first ':' or taken as a key with an empty value */
    sl__rls_entry e[4];
    size_t n = 0, start = 0;
    for (size_t i = 0; i <= size && n < 4; i++) {
        if (i < size && data[i] != '\n') continue;
        const char *line = (const char *)data + start;
        size_t len = i - start, k = 0;
        while (k < len && line[k] != ':') k++;
        e[n].key = line;
        e[n].key_len = k;
        e[n].value = k < len ? line + k + 1 : line + len;
        e[n].value_len = k < len ? len - k - 1 : 0;
        n++;
        start = i + 1;
    }
    static const char *const domains[] = {"d", "test-domain", "rl"};
    for (size_t d = 0; d < 3; d++)
        for (size_t m = 1; m <= n; m++) {
            sl__rls_descriptor q = {.entries = e, .nentries = m};
            sl__domain_match out;
            if (!sl__domain_set_match(s, domains[d], strlen(domains[d]), &q, &out)) continue;
            if (!out.rule || strlen(out.rule) > (4u << 20)) abort();
            if (out.metadata && out.metadata[0] != '{') abort();
            if (out.metadata && out.metadata[strlen(out.metadata) - 1] != '}') abort();
        }
    sl__domain_set_release(s);
    return 0;
}
