/* bench_common.h: small helpers shared by the benchmark programs (not part
 * of libsluice): a fast PRNG, "user:%u" keys formatted without snprintf,
 * monotonic wall time, resident memory, medians, CPU pinning, a random
 * pointer chase over 64-byte lines, the barrier of --serial runs. */
#ifndef SLUICE_BENCH_COMMON_H
#define SLUICE_BENCH_COMMON_H

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* splitmix64: one add, two multiplies; good enough to pick keys. */
static inline uint64_t bench_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, n) by multiply-shift (Lemire), no division. */
static inline uint32_t bench_below(uint64_t r, uint32_t n) {
    return (uint32_t)(((r >> 32) * (uint64_t)n) >> 32);
}

/* Writes "user:<u>" NUL-terminated into buf (>= 16 bytes); returns its length.
 * snprintf would cost more than the decision being measured. */
static inline size_t bench_key(char *buf, uint32_t u) {
    char tmp[10];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    memcpy(buf, "user:", 5);
    for (int i = 0; i < n; i++) buf[5 + i] = tmp[n - 1 - i];
    buf[5 + n] = '\0';
    return 5 + (size_t)n;
}

/* The same key as bench_key(), written to buf (>= 16 bytes) with ONE
 * 16-byte store (zero-padded, so NUL-terminated). Why: a key formatted byte
 * by byte immediately before the call cannot be store-forwarded to the
 * 8-byte loads of a word-at-a-time hash, which then waits for those stores
 * to retire, i.e. for the previous decision's cache misses; that harness
 * artefact slowed sluice's random-key loop by ~1.4x (docs/BENCHMARKS.md).
 * A server's keys come from a request buffer written long before. u < 10^8. */
typedef uint64_t bench_v2u64 __attribute__((vector_size(16)));
static inline size_t bench_key_wide(char *buf, uint32_t u) {
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    return bench_key(buf, u);
#endif
    uint64_t digits = 0;
    int n = 0;
    do { /* the most significant digit ends up in the lowest byte */
        digits = (digits << 8) | (uint64_t)('0' + u % 10);
        u /= 10;
        n++;
    } while (u);
    unsigned __int128 w =
        (unsigned __int128)0x3a72657375ULL /* "user:" */ | ((unsigned __int128)digits << 40);
    bench_v2u64 v = {(uint64_t)w, (uint64_t)(w >> 64)};
    memcpy(buf, &v, 16);
    return 5 + (size_t)n;
}

/* A 24-byte key (the longest sluice keeps inline): "tenant:0042:user:0001234"
 * style, zero-padded so every key has exactly 24 bytes. */
static inline size_t bench_key24(char *buf, uint32_t u) {
    static const char prefix[] = "tenant:0042:user:"; /* 17 bytes + 7 digits */
    memcpy(buf, prefix, 17);
    for (int i = 23; i >= 17; i--) {
        buf[i] = (char)('0' + u % 10);
        u /= 10;
    }
    buf[24] = '\0';
    return 24;
}

/* Waits until every earlier instruction has completed before the next one
 * starts: the decisions (requests) of a --serial run cannot overlap. */
static inline void bench_serialize(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("lfence" ::: "memory");
#elif defined(__aarch64__)
    __asm__ __volatile__("dsb ish\n\tisb" ::: "memory");
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

static inline int64_t bench_wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Resident set size in bytes, from /proc/self/statm (second field, pages). */
static inline long long bench_rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    long long size = 0, resident = 0;
    int ok = fscanf(f, "%lld %lld", &size, &resident);
    fclose(f);
    if (ok != 2) return -1;
    return resident * sysconf(_SC_PAGESIZE);
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of n values (sorts v in place). */
static inline double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Pins the calling thread to one CPU (ignored if not allowed). */
static inline void bench_pin(int cpu) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpu < 0 || ncpu <= 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % ncpu, &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* Links the `lines` 64-byte lines of buf (lines * 64 bytes) into one random
 * cycle (Sattolo's algorithm): the first pointer of each line holds the
 * address of the next line, so a chase (p = *p) is a chain of dependent
 * loads over every line in an order no prefetcher can guess, one cache miss
 * each once buf outgrows the caches (memlat.c; bench_decide's and
 * layout_proto's memlat subject). Returns 0, -1 when out of memory. */
#define BENCH_LINE_PTRS (64 / sizeof(void *))
static inline int bench_chase_link(void **buf, size_t lines, uint64_t *rng) {
    if (lines == 0) return 0;
    uint32_t *perm = malloc(lines * sizeof *perm);
    if (!perm) return -1;
    for (size_t i = 0; i < lines; i++) perm[i] = (uint32_t)i;
    for (size_t i = lines - 1; i > 0; i--) { /* j < i: one cycle through all */
        size_t j = bench_below(bench_rand(rng), (uint32_t)i);
        uint32_t x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    for (size_t i = 0; i < lines; i++)
        buf[i * BENCH_LINE_PTRS] = &buf[(size_t)perm[i] * BENCH_LINE_PTRS];
    free(perm);
    return 0;
}

#endif
