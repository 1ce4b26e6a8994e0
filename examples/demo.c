/* demo.c: libsluice in a dozen lines (build/sluice-demo): the seed's token
 * bucket (2/s, burst 3) deciding five requests on a fake clock. */
#include <stdio.h>

#include "sluice/sluice.h"

int main(void) {
    sl_table_options o = {
        .params = {.algorithm = SL_TOKEN_BUCKET, .rate = {2, SL_NS_PER_SEC}, .burst = 3}};
    sl_table *t;
    int rc = sl_table_create(&o, &t);
    if (rc) {
        fprintf(stderr, "sl_table_create: %s\n", sl_strerror(rc));
        return 1;
    }
    int64_t times_ms[] = {0, 0, 0, 0, 600};
    for (int i = 0; i < 5; i++) {
        sl_decision d;
        sl_table_check(t, "alice", 5, 1, times_ms[i] * SL_NS_PER_MS, &d);
        printf("t=%4lldms take #%d: %s remaining=%lld retry_after=%lldms\n", (long long)times_ms[i],
               i + 1, d.allowed ? "allowed" : "refused", (long long)d.remaining,
               (long long)(d.retry_after / SL_NS_PER_MS));
    }
    sl_table_destroy(t);
    return 0;
}
