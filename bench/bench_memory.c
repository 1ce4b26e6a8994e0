/* bench_memory.c: bytes per key, measured. For each subject, in a fresh
 * child process: read the resident set (/proc/self/statm) and malloc's
 * bytes in use (mallinfo2), create the table, insert N keys (default 1M)
 * at one instant (so nothing decays and nothing is dropped), read both
 * again. Bytes per key = difference / N. sluice's own accounting
 * (sl_table_stats.bytes / keys) is printed next to it.
 *
 * Keys: "user:%u" (6..12 bytes) and, separately, 24-byte keys (the longest
 * sluice stores inline). The peer is peer_handrolled.c (strdup'ed keys). */
#include <getopt.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bench_common.h"
#include "peer_handrolled.h"
#include "sluice/sluice.h"

typedef struct subject {
    const char *name;
    int kind; /* 0 sluice, 1 peer */
    sl_algorithm algo;
    size_t max_memory; /* 0: the default cap */
} subject;

#define GiB ((size_t)1 << 30)

static const subject all[] = {
    {"token_bucket", 0, SL_TOKEN_BUCKET, 2 * GiB},
    {"gcra", 0, SL_GCRA, 2 * GiB},
    {"leaky_queue", 0, SL_LEAKY_QUEUE, 2 * GiB},
    {"fixed_window", 0, SL_FIXED_WINDOW, 2 * GiB},
    {"sliding_window", 0, SL_SLIDING_WINDOW, 2 * GiB},
    {"sliding_log", 0, SL_SLIDING_LOG, 4 * GiB},
    {"token_bucket@64MiB", 0, SL_TOKEN_BUCKET, 0}, /* the default cap: does 1M fit? */
    {"peer", 1, 0, 0},
};
#define NSUB (sizeof all / sizeof all[0])

static size_t malloc_in_use(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd; /* heap chunks in use + mmap'd chunks */
}

/* Runs in the child; prints one line. */
static int measure(const subject *s, uint32_t n, bool key24) {
    char key[32];
    sl_table *t = NULL;
    peer_table *p = NULL;
    long long rss0 = bench_rss_bytes();
    size_t mal0 = malloc_in_use();
    int64_t now = sl_now_monotonic();
    if (s->kind == 0) {
        sl_table_options o = {0};
        o.params.algorithm = s->algo;
        o.params.rate = (sl_rate){100, 60 * SL_NS_PER_SEC};
        o.params.burst = 100;
        o.max_memory = s->max_memory;
        o.seed = 0x9e3779b97f4a7c15ULL;
        int rc = sl_table_create(&o, &t);
        if (rc) {
            fprintf(stderr, "%s: %s\n", s->name, sl_strerror(rc));
            return 1;
        }
        for (uint32_t u = 0; u < n; u++) {
            size_t len = key24 ? bench_key24(key, u) : bench_key(key, u);
            sl_decision d;
            rc = sl_table_check(t, key, len, 1, now, &d);
            if (rc) {
                fprintf(stderr, "%s: insert %u: %s\n", s->name, u, sl_strerror(rc));
                return 1;
            }
        }
    } else {
        p = peer_create(100.0 / 60.0, 100);
        if (!p) return 1;
        for (uint32_t u = 0; u < n; u++) {
            if (key24)
                bench_key24(key, u);
            else
                bench_key(key, u);
            peer_allow(p, key, now);
        }
    }
    long long rss1 = bench_rss_bytes();
    size_t mal1 = malloc_in_use();
    double rss_per = (double)(rss1 - rss0) / n, mal_per = (double)(mal1 - mal0) / n;
    if (s->kind == 0) {
        sl_table_stats st;
        sl_table_stats_get(t, &st);
        printf("%-19s %-6s %9.1f %9.1f %10.1f %6llu %9llu %9llu\n", s->name,
               key24 ? "24 B" : "6-12 B", rss_per, mal_per,
               st.keys ? (double)st.bytes / (double)st.keys : 0, (unsigned long long)st.entry_bytes,
               (unsigned long long)st.keys,
               (unsigned long long)(st.evicted_idle + st.evicted_live));
        sl_table_destroy(t);
    } else {
        printf("%-19s %-6s %9.1f %9.1f %10s %6s %9zu %9s\n", s->name, key24 ? "24 B" : "6-12 B",
               rss_per, mal_per, "-", "-", peer_count(p), "-");
        peer_destroy(p);
    }
    return 0;
}

int main(int argc, char **argv) {
    long n = 1000000;
    const char *only = NULL;
    static const struct option opts[] = {{"keys", required_argument, 0, 'k'},
                                         {"only", required_argument, 0, 'o'},
                                         {"quick", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'k':
            n = atol(optarg);
            break;
        case 'o':
            only = optarg;
            break;
        case 'q':
            break; /* already quick: one pass, about a second per subject */
        case 'h':
            printf("usage: bench_memory [--keys N] [--only NAME]\n");
            return 0;
        default:
            return 2;
        }
    }
    if (n < 1 || n > 100000000) return 2;
    printf("# bench_memory: %ld keys per table, each subject in a fresh process\n", n);
    printf("# rss = resident set growth / keys; malloc = mallinfo2 bytes in use growth / keys;\n"
           "# stats = sl_table_stats.bytes / keys; slot = sl_table_stats.entry_bytes\n");
    printf("%-19s %-6s %9s %9s %10s %6s %9s %9s\n", "subject", "key", "rss B/key", "malloc",
           "stats", "slot", "keys", "evicted");
    fflush(stdout);
    for (int k24 = 0; k24 <= 1; k24++) {
        for (size_t i = 0; i < NSUB; i++) {
            if (only && strcmp(only, all[i].name) != 0) continue;
            if (k24 && strcmp(all[i].name, "token_bucket") && strcmp(all[i].name, "gcra") &&
                strcmp(all[i].name, "peer"))
                continue; /* 24-byte keys: the two targets and the peer */
            pid_t pid = fork();
            if (pid < 0) {
                perror("fork");
                return 1;
            }
            if (pid == 0) {
                int rc = measure(&all[i], (uint32_t)n, k24);
                fflush(stdout);
                _exit(rc);
            }
            int st;
            waitpid(pid, &st, 0);
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                fprintf(stderr, "%s failed\n", all[i].name);
                return 1;
            }
        }
    }
    return 0;
}
