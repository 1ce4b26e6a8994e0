/* test_table.c: the keyed table (sluice/table.h) on a fake clock: idle states
 * vanish losslessly, the memory cap holds under a million distinct keys,
 * CLOCK spares a recently used key, long and empty keys, all-or-nothing
 * multi-limit checks (sl_table_check_all), and every algorithm with the
 * start-empty and count-rejected options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"

#include "helpers.h"

#define T0   (1000 * SEC) /* a time aligned to every window used here */
#define HOUR (3600 * SEC)

static const sl_algorithm all_algorithms[] = {SL_FIXED_WINDOW, SL_SLIDING_LOG, SL_SLIDING_WINDOW,
                                              SL_TOKEN_BUCKET, SL_GCRA,        SL_LEAKY_QUEUE};
#define N_ALGORITHMS (sizeof all_algorithms / sizeof all_algorithms[0])

static sl_table *make_table(sl_algorithm a, sl_rate rate, int64_t burst, unsigned flags,
                            int64_t origin, size_t max_memory, unsigned shards) {
    sl_table_options o = {
        .params = {.algorithm = a, .rate = rate, .burst = burst, .flags = flags, .origin = origin},
        .max_memory = max_memory,
        .shards = shards,
        .seed = 0x5eed5eed12345678u};
    sl_table *t = NULL;
    int rc = sl_table_create(&o, &t);
    if (rc) fail_msg("sl_table_create(%s): %s", sl_algorithm_name(a), sl_strerror(rc));
    return t;
}

static sl_decision check(sl_table *t, const char *key, int64_t cost, int64_t now) {
    sl_decision d;
    int rc = sl_table_check(t, key, strlen(key), cost, now, &d);
    if (rc) fail_msg("sl_table_check(%s): %s", key, sl_strerror(rc));
    return d;
}

static sl_table_stats stats(sl_table *t) {
    sl_table_stats s;
    sl_table_stats_get(t, &s);
    return s;
}

/* Whole tokens (or requests of cost 1) a key has left, without recording anything. */
static int64_t peek(sl_table *t, const char *key, int64_t now) {
    return check(t, key, 0, now).remaining;
}

/* ---- (a) idle states vanish ------------------------------------------------ */

static void idle_states_vanish(void **state) {
    (void)state;
    for (size_t a = 0; a < N_ALGORITHMS; a++) {
        sl_table *t = make_table(all_algorithms[a], (sl_rate){10, SEC}, 10, 0, 0, 0, 0);
        char key[32];
        for (int i = 0; i < 1000; i++) {
            snprintf(key, sizeof key, "idle-%d", i);
            assert_true(check(t, key, 1, T0).allowed);
        }
        sl_table_stats s = stats(t);
        assert_i64(s.keys, 1000);
        assert_i64(s.evicted_idle, 0);
        assert_i64(s.evicted_live, 0);
        /* Nothing is fresh yet: a sweep must not drop anything. */
        assert_i64(sl_table_sweep(t, T0, 1u << 20), 0);
        assert_i64(stats(t).keys, 1000);

        /* Half of the keys are used again just before the sweep: they are
         * live at T0 + 3.5 s (for every algorithm), the others are fresh. */
        for (int i = 500; i < 1000; i++) {
            snprintf(key, sizeof key, "idle-%d", i);
            assert_true(check(t, key, 1, T0 + 3450 * MS).allowed);
        }
        size_t dropped = sl_table_sweep(t, T0 + 3500 * MS, 1u << 20);
        assert_i64(dropped, 500);
        s = stats(t);
        assert_i64(s.keys, 500);
        assert_i64(s.evicted_idle, 500);
        assert_i64(s.evicted_live, 0);
        /* The live ones kept their state; a dropped one comes back fresh. */
        assert_i64(check(t, "idle-700", 1, T0 + 3500 * MS).remaining, 8);
        assert_i64(check(t, "idle-7", 1, T0 + 3500 * MS).remaining, 9);

        /* Later every state is fresh and a sweep empties the table. */
        dropped = sl_table_sweep(t, T0 + 10 * SEC, 1u << 20);
        assert_i64(dropped, 501);
        s = stats(t);
        assert_i64(s.keys, 0);
        assert_i64(s.evicted_idle, 1001);
        assert_i64(s.evicted_live, 0);
        sl_table_destroy(t);
    }
}

/* A small sweep budget is spent a little per shard; repeated sweeps finish
 * the job; bytes go back to what an empty table holds. */
static void sweep_in_small_steps(void **state) {
    (void)state;
    sl_table *t = make_table(SL_GCRA, (sl_rate){1, SEC}, 2, 0, 0, 0, 16);
    char key[64];
    uint64_t long_bytes = 0;
    for (int i = 0; i < 3000; i++) {
        /* every third key is long (stored out of line) */
        int len = snprintf(key, sizeof key,
                           i % 3 ? "k%d" : "a-rather-long-key-of-more-than-24-bytes-%d", i);
        if (len > 24) long_bytes += (uint64_t)len;
        assert_true(check(t, key, 1, T0).allowed);
    }
    uint64_t full_bytes = stats(t).bytes;
    size_t total = 0;
    for (int round = 0; round < 10000 && stats(t).keys > 0; round++) {
        size_t d = sl_table_sweep(t, T0 + 2 * SEC, 64);
        assert_le(d, 64);
        total += d;
    }
    assert_i64(total, 3000);
    sl_table_stats s = stats(t);
    assert_i64(s.keys, 0);
    assert_i64(s.evicted_idle, 3000);
    /* chunks may be kept, but the long keys' bytes must have been given back */
    assert_le(s.bytes, full_bytes - long_bytes);
    sl_table_destroy(t);

    /* The same table dropping long keys returns their bytes. */
    t = make_table(SL_GCRA, (sl_rate){1, SEC}, 2, 0, 0, 0, 1);
    assert_true(check(t, "short", 1, T0).allowed);
    uint64_t before = stats(t).bytes;
    char big[1000];
    memset(big, 'x', sizeof big);
    sl_decision d;
    assert_int_equal(sl_table_check(t, big, sizeof big, 1, T0, &d), SL_OK);
    assert_le(before + sizeof big, stats(t).bytes);
    assert_i64(sl_table_sweep(t, T0 + 5 * SEC, 1000), 2);
    assert_le(stats(t).bytes, before);
    sl_table_destroy(t);
}

/* "Drops up to max_visits states' worth": a budget smaller than the number
 * of shards must not drop more than the budget. */
static void sweep_respects_budget(void **state) {
    (void)state;
    sl_table *t = make_table(SL_TOKEN_BUCKET, (sl_rate){1, SEC}, 1, 0, 0, 0, 16);
    char key[16];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "b%d", i);
        assert_true(check(t, key, 1, T0).allowed);
    }
    size_t d1 = sl_table_sweep(t, T0 + 10 * SEC, 1);
    size_t d0 = sl_table_sweep(t, T0 + 10 * SEC, 0);
    size_t d32 = sl_table_sweep(t, T0 + 10 * SEC, 32);
    sl_table_destroy(t);
    assert_le(d1, 1);
    assert_le(d0, 0);
    assert_le(d32, 32);
}

/* With SL_START_EMPTY a new state is not fresh before origin + reset: it must
 * not be dropped then (a key coming back would be full, not empty). */
static void idle_start_empty_kept_until_refilled(void **state) {
    (void)state;
    sl_table *t = make_table(SL_TOKEN_BUCKET, (sl_rate){10, SEC}, 10, SL_START_EMPTY, T0, 0, 0);
    char key[32];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "se-%d", i);
        /* a peek at T0 + 0.5 s sees 5 tokens (exhausted at origin) and
         * stores nothing; taking one leaves 4 */
        assert_i64(check(t, key, 0, T0 + 500 * MS).remaining, 5);
        assert_i64(check(t, key, 1, T0 + 500 * MS).remaining, 4);
    }
    assert_i64(sl_table_sweep(t, T0 + 999 * MS, 1u << 20), 0);
    assert_i64(stats(t).keys, 100);
    assert_i64(check(t, "se-1", 5, T0 + 500 * MS).allowed, false);
    assert_i64(check(t, "se-1", 4, T0 + 500 * MS).allowed, true);
    /* at T0 + 1.1 s the untouched ones are full again, and can go once that lies the clock
     * tolerance (1 s by default) in the past */
    assert_i64(sl_table_sweep(t, T0 + 2000 * MS, 1u << 20), 0);
    assert_i64(sl_table_sweep(t, T0 + 2100 * MS, 1u << 20), 99);
    assert_i64(stats(t).keys, 1);
    sl_table_destroy(t);
}

/* ---- (b) the memory cap ---------------------------------------------------- */

static void memory_cap_million_keys(void **state) {
    (void)state;
    const size_t cap = (size_t)4 << 20;
    const int inserted = 1000000;
    /* 1 per hour, burst 3: every key taking one token stays live for the run */
    sl_table *t = make_table(SL_TOKEN_BUCKET, (sl_rate){1, HOUR}, 3, 0, 0, cap, 0);
    sl_table_stats s = stats(t);
    assert_i64(s.max_bytes, cap);
    assert_le(s.bytes, s.max_bytes);
    const uint64_t max_keys = cap / s.entry_bytes;
    uint64_t peak_keys = 0;
    char key[32];
    for (int i = 0; i < inserted; i++) {
        int len = snprintf(key, sizeof key, "client-%07d", i);
        sl_decision d;
        int rc = sl_table_check(t, key, (size_t)len, 1, T0 + i, &d);
        if (rc != SL_OK || !d.allowed || d.remaining != 2)
            fail_msg("insert %d: rc %d allowed %d remaining %lld", i, rc, d.allowed,
                     (long long)d.remaining);
        if (i % 4096 == 0) {
            s = stats(t);
            assert_le(s.bytes, s.max_bytes);
            assert_le(s.keys, max_keys);
            if (s.keys > peak_keys) peak_keys = s.keys;
        }
    }
    s = stats(t);
    assert_le(s.bytes, s.max_bytes);
    assert_le(s.keys, max_keys);
    assert_true(s.evicted_live > 0);
    assert_i64(s.evicted_idle, 0); /* nothing was fresh */
    assert_i64(s.keys + s.evicted_live + s.evicted_idle, inserted);
    /* the cap is used, not just respected: at least half of it holds states */
    assert_le(max_keys / 2, s.keys);
    assert_le(max_keys / 2, peak_keys);
    /* the last key inserted is still there and remembers its token */
    assert_i64(check(t, "client-0999999", 1, T0 + inserted).remaining, 1);
    sl_table_destroy(t);
}

/* Long keys are counted against the cap too; one shard so that the shard's
 * own cap is the table's and any overshoot is visible in the stats. */
static void memory_cap_long_keys(void **state) {
    (void)state;
    const size_t cap = (size_t)256 << 10;
    sl_table *t = make_table(SL_TOKEN_BUCKET, (sl_rate){1, HOUR}, 3, 0, 0, cap, 1);
    uint64_t x = 88172645463325252u;
    char *key = malloc(4096);
    assert_non_null(key);
    int failures = 0;
    for (int i = 0; i < 20000; i++) {
        /* three short keys for each long one: chunks keep being added */
        size_t len =
            i % 4 ? 8 + (size_t)(helper_rand(&x) % 17) : 25 + (size_t)(helper_rand(&x) % 3000);
        memset(key, 'L', len);
        int n = snprintf(key, 32, "%d:", i);
        if ((size_t)n < len) key[n] = '-';
        sl_decision d;
        int rc = sl_table_check(t, key, len, 1, T0 + i, &d);
        if (rc != SL_OK) failures++;
        sl_table_stats s = stats(t);
        if (s.bytes > s.max_bytes)
            fail_msg("insert %d (key of %zu bytes): bytes %llu > cap %llu", i, len,
                     (unsigned long long)s.bytes, (unsigned long long)s.max_bytes);
    }
    assert_int_equal(failures, 0);
    sl_table_stats s = stats(t);
    assert_i64(s.keys + s.evicted_live + s.evicted_idle, 20000);
    free(key);
    sl_table_destroy(t);
}

/* Small tables and long keys of many lengths: a key that needs a new chunk
 * and its own bytes must not take the shard past its cap. One shard of a
 * few hundred bytes (chunks of one slot), c short keys, then one long key. */
static void memory_cap_long_key_with_new_chunk(void **state) {
    (void)state;
    char *big = malloc(4096);
    assert_non_null(big);
    memset(big, 'q', 4096);
    char why[256] = "";
    for (size_t cap = 400; cap <= 1000 && !why[0]; cap += 300) {
        for (int c = 0; c < 8 && !why[0]; c++) {
            /* steps of 5 bytes: an overshoot window is a slot (48 bytes) wide */
            for (size_t len = 25; len < cap && !why[0]; len += 5) {
                sl_table *t = make_table(SL_GCRA, (sl_rate){1, HOUR}, 3, 0, 0, cap, 1);
                char key[16];
                for (int i = 0; i < c; i++) {
                    snprintf(key, sizeof key, "s%d", i);
                    assert_true(check(t, key, 1, T0).allowed);
                }
                sl_table_stats before = stats(t), after;
                sl_decision d;
                int rc = sl_table_check(t, big, len, 1, T0, &d);
                after = stats(t);
                if (after.bytes > after.max_bytes || (rc != SL_OK && rc != SL_ENOMEM))
                    snprintf(why, sizeof why,
                             "cap %zu, %d short keys, then a key of %zu bytes: rc %d, bytes "
                             "%llu -> %llu (cap %llu)",
                             cap, c, len, rc, (unsigned long long)before.bytes,
                             (unsigned long long)after.bytes, (unsigned long long)after.max_bytes);
                sl_table_destroy(t);
            }
        }
    }
    free(big);
    if (why[0]) fail_msg("%s", why);
}

/* A shard full of short keys, then one long key: it either fits (if there is
 * room) or fails with SL_ENOMEM, which promises that nothing was changed.
 * Evicting states whose keys are inline frees no bytes, so it must not wipe
 * the shard out to make room that eviction can never give. */
static void memory_cap_long_key_into_full_shard(void **state) {
    (void)state;
    const size_t cap = (size_t)64 << 10;
    sl_table *t = make_table(SL_TOKEN_BUCKET, (sl_rate){1, HOUR}, 3, 0, 0, cap, 1);
    char key[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(key, sizeof key, "s%d", i);
        assert_true(check(t, key, 1, T0).allowed);
    }
    sl_table_stats before = stats(t);
    assert_true(before.evicted_live > 0); /* the shard is at its cap */
    uint64_t room = before.max_bytes - before.bytes;

    /* A long key smaller than the room left fits with at most one eviction
     * (for its slot). */
    size_t small_len = room > 200 ? (size_t)(room / 2) : 100;
    char *big = malloc(SL_KEY_MAX);
    assert_non_null(big);
    memset(big, 'b', SL_KEY_MAX);
    sl_decision d;
    int rc = sl_table_check(t, big, small_len, 1, T0, &d);
    assert_int_equal(rc, SL_OK);
    assert_true(d.allowed);
    sl_table_stats after = stats(t);
    assert_le(after.bytes, after.max_bytes);
    assert_le(after.evicted_live, before.evicted_live + 1);

    /* A key larger than anything eviction can free (the room left plus
     * the one long key): SL_ENOMEM, and the shard keeps its states. */
    before = after;
    memset(big, 'c', SL_KEY_MAX);
    size_t huge_len = (size_t)(before.max_bytes - before.bytes) + small_len + 1;
    assert_le(huge_len, SL_KEY_MAX);
    rc = sl_table_check(t, big, huge_len, 1, T0, &d);
    after = stats(t);
    free(big);
    sl_table_destroy(t);
    assert_le(after.bytes, after.max_bytes);
    if (rc == SL_OK) {
        assert_true(d.allowed);
    } else {
        assert_int_equal(rc, SL_ENOMEM);
        assert_false(d.allowed);
        if (after.keys != before.keys || after.evicted_live != before.evicted_live)
            fail_msg("SL_ENOMEM for a key of %zu bytes, but the table changed: keys %llu -> "
                     "%llu, evicted_live %llu -> %llu",
                     huge_len, (unsigned long long)before.keys, (unsigned long long)after.keys,
                     (unsigned long long)before.evicted_live,
                     (unsigned long long)after.evicted_live);
    }
}

/* ---- (c) CLOCK spares a recently used key ---------------------------------- */

/* `hot` keys are touched round-robin, one between every two inserts of cold
 * keys; `prefill` cold keys are inserted before the hot ones first appear.
 * A hot key that was evicted would come back full: its count must keep going. */
static void run_hot_keys(int hot, int prefill, int cold, unsigned shards) {
    const int64_t burst = 500000;
    sl_table *t = make_table(SL_TOKEN_BUCKET, (sl_rate){1, HOUR}, burst, 0, 0, 64 << 10, shards);
    char key[32];
    int c = 0;
    for (; c < prefill; c++) {
        snprintf(key, sizeof key, "cold-%d", c);
        assert_true(check(t, key, 1, T0).allowed);
    }
    int64_t uses[16] = {0};
    char why[256] = "";
    for (int i = 0; c < prefill + cold && !why[0]; i++, c++) {
        int h = i % hot;
        snprintf(key, sizeof key, "hot-%d", h);
        sl_decision d = check(t, key, 1, T0);
        uses[h]++;
        if (!d.allowed || d.remaining != burst - uses[h])
            snprintf(why, sizeof why,
                     "hot key %d was evicted (insert %d of %d, %d hot, prefill %d, %u shards): "
                     "remaining %lld, expected %lld",
                     h, c, prefill + cold, hot, prefill, shards, (long long)d.remaining,
                     (long long)(burst - uses[h]));
        snprintf(key, sizeof key, "cold-%d", c);
        assert_true(check(t, key, 1, T0).allowed);
    }
    uint64_t evicted = stats(t).evicted_live;
    sl_table_destroy(t);
    if (why[0]) fail_msg("%s", why);
    assert_true(evicted > 0);
}

static void clock_spares_hot_key_inserted_late(void **state) {
    (void)state;
    run_hot_keys(1, 5000, 20000, 1);
    run_hot_keys(8, 5000, 20000, 1);
    run_hot_keys(1, 5000, 20000, 0);
}

static void clock_spares_hot_key_inserted_first(void **state) {
    (void)state;
    run_hot_keys(1, 0, 20000, 1);
}

static void clock_spares_hot_keys_inserted_first(void **state) {
    (void)state;
    run_hot_keys(8, 0, 20000, 1);
}

/* ---- (d) long, empty and near-identical keys ------------------------------- */

static void fill_pattern(uint8_t *k, size_t len) {
    for (size_t i = 0; i < len; i++) k[i] = (uint8_t)(i * 31 + 7);
}

static void long_and_empty_keys(void **state) {
    (void)state;
    static const size_t lens[] = {0, 1, 2, 23, 24, 25, 26, 31, 32, 100, 1000, 4096, SL_KEY_MAX};
    const size_t nl = sizeof lens / sizeof lens[0];
    sl_table *t = make_table(SL_TOKEN_BUCKET, (sl_rate){1, HOUR}, 2, 0, 0, 0, 0);
    uint8_t *a = malloc(SL_KEY_MAX + 1), *b = malloc(SL_KEY_MAX + 1);
    assert_non_null(a);
    assert_non_null(b);
    uint64_t bytes0 = stats(t).bytes;
    /* Every key of a pattern is a prefix of the next longer one; b differs
     * from a in the last byte only. All must be distinct states. */
    for (int pass = 0; pass < 3; pass++) {
        for (size_t i = 0; i < nl; i++) {
            for (int variant = 0; variant < 2; variant++) {
                size_t len = lens[i];
                if (variant && len == 0) continue;
                uint8_t *k = variant ? b : a;
                fill_pattern(k, len);
                if (variant) k[len - 1] ^= 0x01;
                sl_decision d;
                int rc = sl_table_check(t, k, len, 1, T0, &d);
                assert_int_equal(rc, SL_OK);
                if (d.allowed != (pass < 2) || d.remaining != (pass < 2 ? 1 - pass : 0))
                    fail_msg("key of %zu bytes (variant %d), pass %d: allowed %d remaining %lld",
                             len, variant, pass, d.allowed, (long long)d.remaining);
            }
        }
    }
    sl_table_stats s = stats(t);
    assert_i64(s.keys, 2 * nl - 1);
    uint64_t long_bytes = 0;
    for (size_t i = 0; i < nl; i++)
        if (lens[i] > 24) long_bytes += 2 * lens[i];
    assert_le(bytes0 + long_bytes, s.bytes);
    assert_le(s.bytes, s.max_bytes);

    /* "" and a key of one NUL byte are different keys. */
    assert_i64(check(t, "", 0, T0).remaining, 0);
    sl_decision d;
    assert_int_equal(sl_table_check(t, "\0", 1, 1, T0, &d), SL_OK);
    assert_i64(d.remaining, 1);

    /* Longer than SL_KEY_MAX: refused, nothing stored. */
    fill_pattern(a, SL_KEY_MAX + 1);
    assert_int_equal(sl_table_check(t, a, SL_KEY_MAX + 1, 1, T0, &d), SL_EKEY);
    assert_false(d.allowed);
    assert_i64(stats(t).keys, 2 * nl);

    /* All fresh after the refill: swept, and the long keys' bytes are given back. */
    const uint64_t peak_bytes = stats(t).bytes;
    assert_i64(sl_table_sweep(t, T0 + 10 * HOUR, 1u << 20), 2 * nl);
    s = stats(t);
    assert_i64(s.keys, 0);
    assert_le(s.bytes, s.max_bytes);
    assert_le(s.bytes, peak_bytes - long_bytes); /* chunks may stay, long keys may not */
    free(a);
    free(b);
    sl_table_destroy(t);
}

/* Long keys whose 24-byte prefixes are equal, differing at one position each. */
static void long_keys_differing_anywhere(void **state) {
    (void)state;
    sl_table *t = make_table(SL_FIXED_WINDOW, (sl_rate){1, HOUR}, 0, 0, 0, 0, 0);
    uint8_t k[200];
    for (size_t pos = 0; pos < sizeof k; pos++) {
        memset(k, 'z', sizeof k);
        k[pos] = 'y';
        sl_decision d;
        assert_int_equal(sl_table_check(t, k, sizeof k, 1, T0, &d), SL_OK);
        if (!d.allowed) fail_msg("key differing at byte %zu shares a state", pos);
    }
    memset(k, 'z', sizeof k);
    sl_decision d;
    assert_int_equal(sl_table_check(t, k, sizeof k, 1, T0, &d), SL_OK);
    assert_true(d.allowed);
    assert_int_equal(sl_table_check(t, k, sizeof k, 1, T0, &d), SL_OK);
    assert_false(d.allowed);
    sl_table_destroy(t);
}

/* ---- (e) sl_table_check_all ------------------------------------------------ */

static sl_check mk_check(sl_table *t, const char *key, int64_t cost) {
    return (sl_check){.table = t, .key = key, .keylen = strlen(key), .cost = cost};
}

static void check_all_two_tables(void **state) {
    (void)state;
    sl_table *ip = make_table(SL_TOKEN_BUCKET, (sl_rate){10, SEC}, 10, 0, 0, 0, 0);
    sl_table *global = make_table(SL_TOKEN_BUCKET, (sl_rate){3, SEC}, 3, 0, 0, 0, 0);
    size_t refused = 99;
    for (int i = 0; i < 3; i++) {
        sl_check c[2] = {mk_check(ip, "10.0.0.1", 1), mk_check(global, "all", 1)};
        assert_int_equal(sl_table_check_all(c, 2, T0, &refused), SL_OK);
        assert_int_equal(refused, 2);
        assert_true(c[0].decision.allowed);
        assert_true(c[1].decision.allowed);
        assert_i64(c[0].decision.remaining, 9 - i);
        assert_i64(c[1].decision.remaining, 2 - i);
    }
    /* The global limit refuses: the per-IP bucket keeps its 7 tokens. */
    sl_check c[2] = {mk_check(ip, "10.0.0.1", 1), mk_check(global, "all", 1)};
    assert_int_equal(sl_table_check_all(c, 2, T0, &refused), SL_OK);
    assert_int_equal(refused, 1);
    assert_true(c[0].decision.allowed); /* what the per-IP limit said */
    assert_false(c[1].decision.allowed);
    assert_i64(c[1].decision.retry_after, (SEC + 2) / 3); /* 1/3 s rounded up */
    assert_i64(peek(ip, "10.0.0.1", T0), 7);
    assert_i64(peek(global, "all", T0), 0);

    /* Reversed order: the refusing check is the first one. */
    sl_check r[2] = {mk_check(global, "all", 1), mk_check(ip, "10.0.0.1", 1)};
    assert_int_equal(sl_table_check_all(r, 2, T0, &refused), SL_OK);
    assert_int_equal(refused, 0);
    assert_false(r[0].decision.allowed);
    assert_i64(peek(ip, "10.0.0.1", T0), 7);

    /* An exhausted IP refuses: nothing taken from global, which has
     * refilled one token by T0 + 1/3 s. */
    int64_t t1 = T0 + (SEC + 2) / 3;
    assert_true(check(ip, "10.0.0.9", 10, t1).allowed);
    sl_check q[2] = {mk_check(global, "all", 1), mk_check(ip, "10.0.0.9", 1)};
    assert_int_equal(sl_table_check_all(q, 2, t1, &refused), SL_OK);
    assert_int_equal(refused, 1);
    assert_true(q[0].decision.allowed);
    assert_false(q[1].decision.allowed);
    assert_i64(q[1].decision.retry_after, 100 * MS);
    assert_i64(peek(global, "all", t1), 1);
    /* 100 ms later the same request passes and takes from both */
    int64_t t2 = t1 + 100 * MS;
    assert_int_equal(sl_table_check_all(q, 2, t2, &refused), SL_OK);
    assert_int_equal(refused, 2);
    assert_i64(peek(global, "all", t2), 0);
    assert_i64(peek(ip, "10.0.0.9", t2), 0);
    assert_i64(peek(ip, "10.0.0.1", t2), 10); /* 7 + 4.33 refilled, capped at 10 */

    /* refused may be NULL; n == 0 passes */
    assert_int_equal(sl_table_check_all(q, 0, t2, &refused), SL_OK);
    assert_int_equal(refused, 0);
    assert_int_equal(sl_table_check_all(q, 2, t2, NULL), SL_OK);
    sl_table_destroy(ip);
    sl_table_destroy(global);
}

static void check_all_same_key_twice(void **state) {
    (void)state;
    for (size_t a = 0; a < N_ALGORITHMS; a++) {
        sl_table *t = make_table(all_algorithms[a], (sl_rate){3, SEC}, 3, 0, 0, 0, 0);
        size_t refused = 99;
        /* 2 + 2 > 3: the second refuses, and the first is not recorded */
        sl_check c[2] = {mk_check(t, "k", 2), mk_check(t, "k", 2)};
        assert_int_equal(sl_table_check_all(c, 2, T0, &refused), SL_OK);
        assert_int_equal(refused, 1);
        assert_true(c[0].decision.allowed);
        assert_false(c[1].decision.allowed);
        assert_i64(peek(t, "k", T0), 3);
        /* 1 + 2 <= 3: both recorded; each decision sees the ones before it */
        c[0].cost = 1;
        assert_int_equal(sl_table_check_all(c, 2, T0, &refused), SL_OK);
        assert_int_equal(refused, 2);
        assert_i64(c[0].decision.remaining, 2);
        assert_i64(c[1].decision.remaining, 0);
        assert_i64(peek(t, "k", T0), 0);
        sl_table_destroy(t);
    }
}

static void check_all_count_rejected(void **state) {
    (void)state;
    /* counting: 10/s burst 10, counts rejections; strict: 1/s burst 1, does not */
    sl_table *counting =
        make_table(SL_TOKEN_BUCKET, (sl_rate){10, SEC}, 10, SL_COUNT_REJECTED, 0, 0, 0);
    sl_table *strict = make_table(SL_TOKEN_BUCKET, (sl_rate){1, SEC}, 1, 0, 0, 0, 0);
    size_t refused;
    sl_check c[2] = {mk_check(counting, "u", 1), mk_check(strict, "u", 1)};
    assert_int_equal(sl_table_check_all(c, 2, T0, &refused), SL_OK);
    assert_int_equal(refused, 2);
    assert_i64(peek(counting, "u", T0), 9);
    assert_i64(peek(strict, "u", T0), 0);
    /* strict refuses: counting is charged anyway, strict is not */
    assert_int_equal(sl_table_check_all(c, 2, T0, &refused), SL_OK);
    assert_int_equal(refused, 1);
    assert_i64(peek(counting, "u", T0), 8);
    /* strict at T0 + 0.5 s has half a token; an uncharged refusal keeps it */
    assert_int_equal(sl_table_check_all(c, 2, T0 + 500 * MS, &refused), SL_OK);
    assert_int_equal(refused, 1);
    assert_int_equal(sl_table_check_all(c, 2, T0 + SEC, &refused), SL_OK);
    assert_int_equal(refused, 2);
    sl_table_destroy(counting);
    sl_table_destroy(strict);

    /* The counting table itself refuses: it is charged (never below empty),
     * the other one is not touched. */
    counting = make_table(SL_TOKEN_BUCKET, (sl_rate){1, SEC}, 2, SL_COUNT_REJECTED, 0, 0, 0);
    strict = make_table(SL_TOKEN_BUCKET, (sl_rate){1, SEC}, 10, 0, 0, 0, 0);
    sl_check d[2] = {mk_check(strict, "v", 1), mk_check(counting, "v", 2)};
    assert_int_equal(sl_table_check_all(d, 2, T0, &refused), SL_OK);
    assert_int_equal(refused, 2);
    /* at T0 + 0.5 s counting has 0.5 token: cost 1 refused and charged to 0 */
    d[1].cost = 1;
    assert_int_equal(sl_table_check_all(d, 2, T0 + 500 * MS, &refused), SL_OK);
    assert_int_equal(refused, 1);
    assert_i64(peek(strict, "v", T0 + 500 * MS), 9); /* 9.5: untouched */
    /* charged, counting has 0.5 token at T0 + 1 s (1 if it had not been) */
    assert_int_equal(sl_table_check_all(d, 2, T0 + SEC, &refused), SL_OK);
    assert_int_equal(refused, 1);
    assert_i64(peek(strict, "v", T0 + SEC), 10);
    assert_int_equal(sl_table_check_all(d, 2, T0 + 2 * SEC, &refused), SL_OK);
    assert_int_equal(refused, 2);
    sl_table_destroy(counting);
    sl_table_destroy(strict);
}

static void check_all_errors(void **state) {
    (void)state;
    sl_table *t = make_table(SL_TOKEN_BUCKET, (sl_rate){5, SEC}, 5, 0, 0, 0, 0);
    sl_check c[SL_CHECK_MAX + 1];
    char keys[SL_CHECK_MAX + 1][8];
    for (int i = 0; i <= SL_CHECK_MAX; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        c[i] = mk_check(t, keys[i], 1);
    }
    size_t refused = 99;
    assert_int_equal(sl_table_check_all(c, SL_CHECK_MAX + 1, T0, &refused), SL_ETOOMANY);
    assert_i64(stats(t).keys, 0);
    /* exactly SL_CHECK_MAX is fine */
    assert_int_equal(sl_table_check_all(c, SL_CHECK_MAX, T0, &refused), SL_OK);
    assert_int_equal(refused, SL_CHECK_MAX);
    assert_i64(stats(t).keys, SL_CHECK_MAX);
    for (int i = 0; i < SL_CHECK_MAX; i++) assert_i64(peek(t, keys[i], T0), 4);

    /* a cost that can never pass, at index 2 */
    c[2].cost = 6;
    refused = 99;
    assert_int_equal(sl_table_check_all(c, 4, T0, &refused), SL_ECOST);
    assert_int_equal(refused, 2);
    for (int i = 0; i < 4; i++) assert_false(c[i].decision.allowed);
    for (int i = 0; i < 4; i++) assert_i64(peek(t, keys[i], T0), 4);
    /* a negative cost, at index 0 */
    c[2].cost = 1;
    c[0].cost = -1;
    assert_int_equal(sl_table_check_all(c, 4, T0, &refused), SL_ECOST);
    assert_int_equal(refused, 0);
    c[0].cost = 1;
    /* a key too long, at index 3 */
    static uint8_t huge[SL_KEY_MAX + 1];
    c[3].key = huge;
    c[3].keylen = sizeof huge;
    assert_int_equal(sl_table_check_all(c, 4, T0, &refused), SL_EKEY);
    assert_int_equal(refused, 3);
    for (int i = 0; i < 3; i++) assert_i64(peek(t, keys[i], T0), 4);
    assert_i64(stats(t).keys, SL_CHECK_MAX);
    sl_table_destroy(t);
}

/* Sixteen checks on one sliding log key: the undo log exceeds the on-stack buffer. */
static void check_all_big_states(void **state) {
    (void)state;
    sl_table *t = make_table(SL_SLIDING_LOG, (sl_rate){20, SEC}, 0, 0, 0, 0, 0);
    sl_table *u = make_table(SL_SLIDING_LOG, (sl_rate){100, SEC}, 0, 0, 0, 0, 0);
    sl_check c[SL_CHECK_MAX];
    for (int i = 0; i < SL_CHECK_MAX; i++) c[i] = mk_check(i % 2 ? t : u, "same", 1);
    size_t refused;
    assert_int_equal(sl_table_check_all(c, SL_CHECK_MAX, T0, &refused), SL_OK);
    assert_int_equal(refused, SL_CHECK_MAX);
    assert_i64(peek(t, "same", T0), 12);
    assert_i64(peek(u, "same", T0), 92);
    /* 12 left in t: the 13th check of t in one request refuses */
    for (int i = 0; i < SL_CHECK_MAX; i++) c[i] = mk_check(t, "same", 1);
    assert_int_equal(sl_table_check_all(c, SL_CHECK_MAX, T0, &refused), SL_OK);
    assert_int_equal(refused, 12);
    assert_i64(peek(t, "same", T0), 12);
    sl_table_destroy(t);
    sl_table_destroy(u);
}

/* ---- (f) every algorithm through the table, with the options ---------------- */

static void algorithms_with_flags(void **state) {
    (void)state;
    static const unsigned flag_sets[] = {0, SL_START_EMPTY, SL_COUNT_REJECTED,
                                         SL_START_EMPTY | SL_COUNT_REJECTED};
    const int64_t P = SEC;
    for (size_t a = 0; a < N_ALGORITHMS; a++) {
        for (size_t f = 0; f < 4; f++) {
            sl_algorithm alg = all_algorithms[a];
            unsigned flags = flag_sets[f];
            bool counting = flags & SL_COUNT_REJECTED;
            /* origin long ago: keys are full at T0 even when starting empty */
            sl_table *t = make_table(alg, (sl_rate){5, P}, 5, flags, T0 - 100 * P, 0, 0);
            for (int i = 0; i < 4; i++) {
                sl_decision d = check(t, "k", 1, T0);
                if (!d.allowed || d.remaining != 4 - i || d.limit != 5)
                    fail_msg("%s flags %u request %d: allowed %d remaining %lld limit %lld",
                             sl_algorithm_name(alg), flags, i, d.allowed, (long long)d.remaining,
                             (long long)d.limit);
                int64_t delay = alg == SL_LEAKY_QUEUE ? i * 200 * MS : 0;
                assert_i64(d.delay, delay);
            }
            sl_decision d = check(t, "k", 2, T0);
            assert_false(d.allowed);
            assert_true(d.retry_after > 0);
            /* a counted rejection uses the last unit up */
            d = check(t, "k", 1, T0);
            if (d.allowed == counting)
                fail_msg("%s flags %u: cost 1 after a refused cost 2: allowed %d",
                         sl_algorithm_name(alg), flags, d.allowed);
            /* cost above the limit: SL_ECOST, retry_after -1 */
            int rc = sl_table_check(t, "k", 1, 6, T0, &d);
            assert_int_equal(rc, SL_ECOST);
            assert_false(d.allowed);
            assert_i64(d.retry_after, -1);
            /* two periods later everything is fresh again */
            d = check(t, "k", 5, T0 + 2 * P);
            assert_true(d.allowed);
            assert_i64(d.remaining, 0);
            /* a key seen first long after origin is full */
            d = check(t, "other", 5, T0 + 2 * P);
            assert_true(d.allowed);
            sl_table_destroy(t);

            /* origin now: keys start exhausted when SL_START_EMPTY is set */
            t = make_table(alg, (sl_rate){5, P}, 5, flags, T0, 0, 0);
            d = check(t, "k", 1, T0);
            if (d.allowed == (bool)(flags & SL_START_EMPTY))
                fail_msg("%s flags %u: first request at origin allowed %d", sl_algorithm_name(alg),
                         flags, d.allowed);
            if (flags & SL_START_EMPTY) assert_true(d.retry_after > 0);
            d = check(t, "k2", 5, T0 + 2 * P);
            assert_true(d.allowed);
            sl_table_destroy(t);
        }
    }
}

/* A sliding window of the longest period, refused after a clock that went
 * far back: retry_after saturates instead of overflowing (found by
 * fuzz_decide: to_end is 2 periods there, and the wait adds one more). */
static void sliding_window_retry_after_far_back(void **state) {
    (void)state;
    const int64_t P = INT64_C(36000) * 86400 * SEC; /* 3P > INT64_MAX */
    sl_table_options o = {.params = {.algorithm = SL_SLIDING_WINDOW, .rate = {1, P}},
                          .max_memory = 1 << 20,
                          .seed = 7};
    sl_table *t = NULL;
    assert_int_equal(sl_table_create(&o, &t), SL_OK);
    sl_decision d;
    assert_int_equal(sl_table_check(t, "k", 1, 1, P + 1, &d), SL_OK);
    assert_true(d.allowed);
    assert_int_equal(sl_table_check(t, "k", 1, 1, 0, &d), SL_OK);
    assert_false(d.allowed);
    assert_i64(d.retry_after, INT64_MAX);
    sl_table_destroy(t);
}

/* Bad options and parameters are refused at creation. */
static void create_errors(void **state) {
    (void)state;
    sl_table *t = NULL;
    sl_table_options o = {.params = {.algorithm = SL_TOKEN_BUCKET, .rate = {1, SEC}, .burst = 1}};
    o.shards = 3;
    assert_int_equal(sl_table_create(&o, &t), SL_EINVAL);
    o.shards = 2048;
    assert_int_equal(sl_table_create(&o, &t), SL_EINVAL);
    o.shards = 0;
    o.max_memory = 16;
    assert_int_equal(sl_table_create(&o, &t), SL_EINVAL);
    o.max_memory = 0;
    o.params.burst = 0;
    assert_int_equal(sl_table_create(&o, &t), SL_EBURST);
    o.params.burst = 1;
    o.params.rate.limit = 0;
    assert_int_equal(sl_table_create(&o, &t), SL_ERATE);
    assert_null(t);
    assert_int_equal(sl_table_create(NULL, &t), SL_EINVAL);
    /* the smallest table that can hold a state works */
    o.params.rate.limit = 1;
    o.shards = 1;
    for (size_t m = 64; m < 4096; m += 8) {
        o.max_memory = m;
        if (sl_table_create(&o, &t) == SL_OK) break;
    }
    assert_non_null(t);
    sl_decision d;
    assert_int_equal(sl_table_check(t, "a", 1, 1, T0, &d), SL_OK);
    assert_true(d.allowed);
    assert_int_equal(sl_table_check(t, "b", 1, 1, T0, &d), SL_OK);
    assert_true(d.allowed);
    sl_table_stats s = stats(t);
    assert_le(s.bytes, s.max_bytes);
    assert_i64(s.keys + s.evicted_live, 2);
    assert_true(sl_table_params(t)->algorithm == SL_TOKEN_BUCKET);
    sl_table_destroy(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idle_states_vanish),
        cmocka_unit_test(sweep_in_small_steps),
        cmocka_unit_test(sweep_respects_budget),
        cmocka_unit_test(idle_start_empty_kept_until_refilled),
        cmocka_unit_test(memory_cap_million_keys),
        cmocka_unit_test(memory_cap_long_keys),
        cmocka_unit_test(memory_cap_long_key_with_new_chunk),
        cmocka_unit_test(memory_cap_long_key_into_full_shard),
        cmocka_unit_test(clock_spares_hot_key_inserted_late),
        cmocka_unit_test(clock_spares_hot_key_inserted_first),
        cmocka_unit_test(clock_spares_hot_keys_inserted_first),
        cmocka_unit_test(long_and_empty_keys),
        cmocka_unit_test(long_keys_differing_anywhere),
        cmocka_unit_test(check_all_two_tables),
        cmocka_unit_test(check_all_same_key_twice),
        cmocka_unit_test(check_all_count_rejected),
        cmocka_unit_test(check_all_errors),
        cmocka_unit_test(check_all_big_states),
        cmocka_unit_test(algorithms_with_flags),
        cmocka_unit_test(sliding_window_retry_after_far_back),
        cmocka_unit_test(create_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
