/* decide_us.h: the decisions of sluice-redis.so (SLUICE.DECIDE), every
 * algorithm in whole microseconds, exactly as src/store/decide.lua decides
 * them (its top comment is the spec: arguments, state layout, TTL rule).
 * Pure: no Redis calls; the sliding log reads its stored list through a
 * callback. No floating point: int64 values (every count, state value and
 * parameter below 2^52, times below 2^53 us, as the script checks them) and
 * __int128 where the script uses Dekker's exact product.
 *
 * The maths, with the script's names (n/p the rate N/P with gcd removed):
 * - token bucket: tokens scaled by p (full = B*p <= 2^52); refill
 *   (now - last) * n, full after ceil((full - tokens) / n) us; with step
 *   refill, (step(now) - step(last)) * n, step(t) = t - t mod P;
 * - GCRA / leaky queue: tat + frac/n us, 0 <= frac < n; a cost c moves it
 *   by c*p/n us (quotient into tat, remainder into frac); allowed iff
 *   (tat - now) * n + frac <= full; the leaky queue's delay_after D takes
 *   D*p/n us off its delay (at least 0);
 * - sliding window: allowed iff prev * (P - elapsed) + (curr + c) * P <=
 *   N * P, compared in 128 bits (the script: two_prod); remaining =
 *   N - after - ceil(prev * (P - elapsed) / P); retry is the first us at
 *   which prev * (P - e) <= (N - after - c) * P, e = P - floor((N - after -
 *   c) * P / prev);
 * - fixed window: windows of P us, or calendar months (UTC, proleptic
 *   Gregorian, H. Hinnant's days_from_civil / civil_from_days);
 * - roundings: retry_after, reset_after and delay up, remaining down. */
#ifndef SLUICE_REDIS_MODULE_DECIDE_US_H
#define SLUICE_REDIS_MODULE_DECIDE_US_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL__MOD_FW   1 /* sl_algorithm numbers, as the script reads them */
#define SL__MOD_SLOG 2
#define SL__MOD_SW   3
#define SL__MOD_TB   4
#define SL__MOD_GCRA 5
#define SL__MOD_LQ   6

#define SL__MOD_MAXV   (INT64_C(1) << 52)        /* every count, size and scaled value */
#define SL__MOD_TMAX   INT64_C(4611686018427387) /* SL_TIME_MAX (2^62 ns) in us */
#define SL__MOD_PMAX   INT64_C(3162240000000000) /* 100 years of 366 days in us */
#define SL__MOD_LOGMAX 100000                    /* SL_SLIDING_LOG_MAX */
#define SL__MOD_TAGMAX 16
#define SL__MOD_FMAX   (SL__MOD_MAXV - 1) /* flags: delay_after x 1024 + options */

typedef enum sl__mod_mode { SL__MOD_APPLY, SL__MOD_PEEK, SL__MOD_CHARGE } sl__mod_mode;

/* A parameter set of a call, checked (sl__mod_set_check). */
typedef struct sl__mod_set {
    int alg;
    int64_t N, P, B, origin;
    bool cal, any, empty, cr;
    bool steps; /* token bucket: refills in whole periods (flags 4) */
    int64_t da; /* leaky queue: delay_after (flags / 1024) */
    int64_t n, p, full, maxcost, limit;
    char fp[SL__MOD_TAGMAX + 1]; /* the state's tag ("cell" for any rate) */
    size_t fplen;
    bool t3on; /* gcra with n 1: the state is "<tat><t3>" in decimal */
    char t3[4];
} sl__mod_set;

/* A run of c new sliding-log entries at time t. */
typedef struct sl__mod_run {
    int64_t t, c;
} sl__mod_run;

/* Reads element j (0-based) of the stored list of a sliding log. */
typedef int64_t (*sl__mod_list_at)(void *list, int64_t j);

/* A sliding log: its stored list (blen elements, of which `drop` are gone
 * from the head in this call), plus this call's new runs at the tail; a
 * start-empty key that does not exist is a virtual list of blen entries at
 * vt. runs is owned (sl__mod_state_free). */
typedef struct sl__mod_log {
    sl__mod_list_at at;
    void *list;
    int64_t blen, drop, radd;
    sl__mod_run *runs;
    size_t rhead, rlen, rcap; /* the live runs are runs[rhead..rlen) */
    bool has_vt;
    int64_t vt;
    bool exists, wrong; /* the key exists; it holds another type */
} sl__mod_log;

/* One key's state during a call: v[] as the script's s[1..3], or a log. */
typedef struct sl__mod_state {
    int64_t v[3];
    bool dirty;
    bool is_log;
    sl__mod_log log;
} sl__mod_state;

/* Checks the 6 numbers of parameter set j (1-based; alg, N, P, B, flags,
 * origin already parsed as integers in their ranges) and its tag, and fills
 * ps. Returns NULL, or the error text after "ERR sluice: " written into
 * err (errlen bytes). */
const char *sl__mod_set_check(sl__mod_set *ps, int j, const int64_t v[6], const char *tag,
                              size_t taglen, char *err, size_t errlen);

/* A brand-new key's state at now (fresh, or exhausted at the origin). For
 * a log, only its virtual part (the caller sets the list). */
void sl__mod_init(const sl__mod_set *ps, sl__mod_state *s, int64_t now);

/* Parses a stored string state v[0..len) written under ps; false when it is
 * not one (the key then reads as fresh). */
bool sl__mod_parse(const sl__mod_set *ps, const char *v, size_t len, sl__mod_state *s);

/* The longest stored string state: a tag of 16, '|', three hex numbers of
 * at most 16 digits with their ':'. */
#define SL__MOD_STATE_MAX (SL__MOD_TAGMAX + 1 + 3 * 17)

/* Formats s as its stored string into out (SL__MOD_STATE_MAX bytes at
 * least); returns the length. By hand (sl__mod_put_hex, sl__decimal_i64):
 * no printf per decision. */
size_t sl__mod_format(const sl__mod_set *ps, const sl__mod_state *s, char *out);

/* Writes v in lower-case hex at p (at most 16 bytes, no NUL); returns the
 * bytes written. */
size_t sl__mod_put_hex(char *p, uint64_t v);

/* decide(ps, s, cost, mode, cr) of the script: the 6 reply integers into
 * out (allowed, limit, remaining, retry_after_us, reset_after_us,
 * delay_us); s changes only when mode is not PEEK and the decision changes
 * it (then s->dirty). Returns false when a sliding log's runs could not
 * grow (out of memory; s unchanged then). */
bool sl__mod_decide(const sl__mod_set *ps, sl__mod_state *s, int64_t cost, sl__mod_mode mode,
                    bool cr, int64_t now, int64_t out[6]);

/* The TTL (us, relative to now) after which a dirty state equals a fresh
 * key's; for a log, first drops the entries expired at now. */
int64_t sl__mod_ttl(const sl__mod_set *ps, sl__mod_state *s, int64_t now);

/* A deep copy of src into dst (false: out of memory, dst untouched). */
bool sl__mod_state_copy(sl__mod_state *dst, const sl__mod_state *src);
void sl__mod_state_free(sl__mod_state *s);

/* The sliding log's live entries (stored minus dropped plus new). */
int64_t sl__mod_log_len(const sl__mod_log *l);

/* Memory for the runs (RedisModule_Realloc / Free inside Redis, realloc /
 * free elsewhere): set once before any call. */
extern void *(*sl__mod_realloc)(void *p, size_t bytes);
extern void (*sl__mod_free)(void *p);

#endif
