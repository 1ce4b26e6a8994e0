/* quickstart.c: the README's example. Build against the installed library
 * (the rpath lets it run from any prefix, without LD_LIBRARY_PATH):
 *   cc quickstart.c $(pkg-config --cflags --libs sluice) \
 *      -Wl,-rpath,"$(pkg-config --variable=libdir sluice)" -o quickstart */
#include <sluice/sluice.h>
#include <stdio.h>

int main(void) {
    sl_table_options opts = {
        .params = {.algorithm = SL_GCRA, .burst = 5},
        .max_memory = 16 << 20, /* hard cap: 16 MiB of states */
    };
    if (sl_rate_parse("5/s", &opts.params.rate) != SL_OK) return 1;
    sl_table *limits;
    int rc = sl_table_create(&opts, &limits);
    if (rc != SL_OK) return fprintf(stderr, "%s\n", sl_strerror(rc)), 1;

    int64_t now = sl_now();
    for (int i = 1; i <= 7; i++) {
        sl_decision d;
        sl_table_check(limits, "alice", 5, 1, now, &d);
        printf("request %d: %s, remaining %lld, retry after %lld ms\n", i,
               d.allowed ? "allowed" : "limited", (long long)d.remaining,
               (long long)(d.retry_after / SL_NS_PER_MS));
    }
    sl_table_destroy(limits);
    return 0;
}
