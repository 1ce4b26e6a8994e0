/* fuzz_rate.c: libFuzzer target for the text parsers (rates, durations,
 * algorithm names). Property: whatever parses formats back to text that
 * parses to the same value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char text[128];
    if (size >= sizeof text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    sl_rate r;
    if (sl_rate_parse(text, &r) == SL_OK) {
        if (r.limit <= 0 || r.period <= 0) abort();
        char back[64];
        int n = sl_rate_format(r, back, sizeof back);
        if (n <= 0 || (size_t)n >= sizeof back) abort();
        sl_rate again;
        if (sl_rate_parse(back, &again) != SL_OK) abort();
        if (again.limit != r.limit || again.period != r.period) abort();
    }
    int64_t ns;
    if (sl_duration_parse(text, &ns) == SL_OK && ns < 0) abort();
    sl_algorithm a;
    if (sl_algorithm_parse(text, &a) == SL_OK && strcmp(sl_algorithm_name(a), text) != 0) abort();
    return 0;
}
