/* memlat.c: latency of a dependent random memory access on this machine,
 * by pointer chasing. For each working-set size, one pointer per 64-byte
 * line, linked in a single random cycle (Sattolo's algorithm), so every load
 * depends on the previous one and lands on an unpredictable line: the
 * hardware prefetchers cannot help. A random-key lookup in a big table needs
 * at least one such access, so this is the floor under its cost.
 *
 * Reported per size: median ns per access over several runs, with 4 KiB
 * pages and, where the kernel allows (THP in "madvise" mode), with 2 MiB
 * transparent huge pages (fewer TLB misses). */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench_common.h"

#define LINE 64

static uint64_t rng_state = 12345;

static __attribute__((noinline)) void *chase(void *p, uint64_t steps) {
    for (uint64_t i = 0; i < steps; i += 8) {
        p = *(void **)p;
        p = *(void **)p;
        p = *(void **)p;
        p = *(void **)p;
        p = *(void **)p;
        p = *(void **)p;
        p = *(void **)p;
        p = *(void **)p;
    }
    return p;
}

static double measure(size_t bytes, int huge, int runs, double secs) {
    size_t map = (bytes + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    char *buf = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) return -1;
    madvise(buf, map, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    size_t n = bytes / LINE;
    if (bench_chase_link((void **)buf, n, &rng_state)) exit(1); /* one random cycle */
    void *p = buf;
    /* calibrate: steps for about `secs` */
    uint64_t steps = 1 << 16;
    for (;;) {
        int64_t t0 = bench_wall_ns();
        p = chase(p, steps);
        int64_t dt = bench_wall_ns() - t0;
        if (dt > 20000000 || steps > (1ull << 34)) {
            steps = (uint64_t)((double)steps * secs * 1e9 / (double)dt) & ~7ull;
            if (steps < 8) steps = 8;
            break;
        }
        steps *= 4;
    }
    double v[64];
    for (int r = 0; r < runs; r++) {
        int64_t t0 = bench_wall_ns();
        p = chase(p, steps);
        v[r] = (double)(bench_wall_ns() - t0) / (double)steps;
    }
    __asm__ __volatile__("" : : "r"(p));
    munmap(buf, map);
    return bench_median(v, runs);
}

int main(int argc, char **argv) {
    int runs = 5;
    double secs = 0.2;
    static const struct option opts[] = {{"quick", no_argument, 0, 'q'},
                                         {"runs", required_argument, 0, 'r'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'q':
            runs = 3;
            secs = 0.05;
            break;
        case 'r':
            runs = atoi(optarg);
            break;
        case 'h':
            printf("usage: memlat [--quick] [--runs N]\n");
            return 0;
        default:
            return 2;
        }
    }
    if (runs < 1 || runs > 64) return 2;
    bench_pin(0);
    static const size_t sizes[] = {
        16u << 10, 256u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20, 256u << 20, 1024u << 20,
    };
    printf("# memlat: dependent random loads (pointer chasing, one pointer per 64 B line),\n"
           "# median of %d runs; ns per access\n",
           runs);
    printf("%10s %12s %12s\n", "size", "4K pages", "THP 2M");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t s = sizes[i];
        double small = measure(s, 0, runs, secs);
        double huge = measure(s, 1, runs, secs);
        char label[32];
        if (s >= (1u << 20))
            snprintf(label, sizeof label, "%zu MiB", s >> 20);
        else
            snprintf(label, sizeof label, "%zu KiB", s >> 10);
        printf("%10s %12.1f %12.1f\n", label, small, huge);
        fflush(stdout);
    }
    return 0;
}
