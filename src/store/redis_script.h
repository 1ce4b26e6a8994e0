/* redis_script.h: the Lua script that decides limits inside Redis (one
 * atomic step per request, every algorithm), and the C side that formats
 * its EVALSHA/EVAL commands and reads its replies. Pure: no sockets.
 *
 * The script (src/store/decide.lua, embedded at build time; its top comment
 * has the state layout per algorithm, the TTL rule and the arithmetic) is
 * called as
 *   EVALSHA <sha> <n> <key_1..key_n> <now_us> <m> <set args x m> <item args x n>
 * now_us: "0" = use Redis TIME (the one clock of the fleet); tests pass an
 * explicit time. The m parameter sets are the distinct limits of the call
 * (sl__redis_script_format finds them: the script checks each once per
 * call, however many items share it), 7 arguments each:
 *   algorithm (sl_algorithm number), limit, period_us, burst,
 *   flags (SL_START_EMPTY | SL_COUNT_REJECTED | SL_STEP_REFILL |
 *   SL__SCRIPT_CALENDAR_MONTH | SL__SCRIPT_ANY_RATE, plus the leaky queue's
 *   delay_after x SL__SCRIPT_DELAY_AFTER, or a token bucket's floor x
 *   SL__SCRIPT_DELAY_AFTER), origin_us, tag (the state's tag, a 32-bit hash in
 *   hex: a state written under other parameters reads as a fresh key).
 * Per item, in order, 3 arguments: its parameter set (1..m), cost, group
 * (0 enforced, 1 shadow; 2r + g for group g of request r when one call
 * carries several requests, see decide.lua).
 * The script works in whole microseconds: sl__redis_script_format rounds the
 * period and the origin up to whole us (never a shorter period or an earlier
 * origin); decisions come back in us and are returned in ns (x1000), so
 * retry_after, reset_after and delay are rounded up to whole us where the C
 * core rounds them to whole ns. With a period and an emission interval
 * (period / limit) that are whole us, and whole-us times, every field is the
 * C core's exactly, with one exception: a sliding window's retry_after is a
 * fraction of the period even then (the first instant at which the
 * previous window's weight lets the cost pass), and is the C core's
 * rounded up to the us (never early). sl__redis_script_check says which parameters the script
 * decides exactly (use it when a config selects the Redis store).
 *
 * Groups (the semantics of sl__policy_check_all): group 0 is decided as one
 * all-or-nothing group; if it passes it is charged and group 1 is decided as
 * its own all-or-nothing group (charged when it passes); if group 0 refuses
 * nothing is charged (count_rejected tables excepted) and group 1 is only
 * looked at (cost 0). Items are decided in the order given; the same key may
 * come twice (its costs add up) but then with the same parameters. When a
 * group refuses (group 1 included), its count_rejected items are charged as
 * a rejection; an allowed item reports what its limit has now (its cost
 * given back in remaining), a count_rejected item the state its charge
 * left: store.h's contract, which the memory store keeps too. A cost that can never pass (above the
 * limit for windows, the burst for buckets) refuses its group with nothing charged at all, and that
 * item's decision is allowed 0, remaining 0, retry_after -1, reset_after 0.
 * Every key gets a TTL (PEXPIRE) of the time after which its state is the
 * same as a fresh key's, so idle keys vanish; a decision that changes
 * nothing writes nothing.
 * Reply: one flat array of n x SL__SCRIPT_REPLY_FIELDS (6) integers, item
 * after item (Redis converts one flat Lua table much faster than n nested
 * ones):
 *   allowed (0/1), limit, remaining, retry_after_us (-1: never, the cost
 *   exceeds the limit), reset_after_us, delay_us (leaky queue: how long an
 *   accepted request waits, rounded up; 0 for the other algorithms).
 * Arguments out of range get an error reply "ERR sluice: ..." and change
 * nothing. */
#ifndef SLUICE_STORE_REDIS_SCRIPT_H
#define SLUICE_STORE_REDIS_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/limit.h"
#include "util/buf.h"

#define SL__SCRIPT_CALENDAR_MONTH 0x100u /* flags: fixed window = the calendar month (UTC) */
#define SL__SCRIPT_ANY_RATE       0x200u /* flags: GCRA state read under any parameters */
#define SL__SCRIPT_DELAY_AFTER    0x400  /* flags: delay_after, in units of this (below 2^42) */
#define SL__SCRIPT_ARGS_PER_SET   7      /* per parameter set */
#define SL__SCRIPT_ARGS_PER_ITEM  3      /* per item: parameter set, cost, group */
#define SL__SCRIPT_MAX_ITEMS      512    /* items in one call (store.c sends at most as many) */
#define SL__SCRIPT_REPLY_FIELDS   6

/* One limit of a script call. */
typedef struct sl__script_item {
    const sl_params *params; /* algorithm, rate, burst, flags, origin (ns) */
    bool calendar_month;     /* a calendar-month quota (fixed window of 31 days in the config) */
    bool any_rate;           /* gcra: one state per key whatever the parameters (CL.THROTTLE) */
    const char *rkey;        /* the Redis key (already prefixed and hash-tagged) */
    size_t rkeylen;
    int64_t cost;
    /* a token bucket's floor (sluice/shed.h: a shedding capacity's reserve
       for this request's priority), 0..burst-1: it passes iff tokens - cost
       >= floor, remaining is what is left above it; else 0 */
    int64_t floor;
    unsigned group;       /* 0 enforced, 1 shadow; + 2 x the request's index in a batch */
    sl_decision decision; /* out (ns); retry_after -1 = never */
    bool decided;         /* out */
} sl__script_item;

/* The script's source text and its SHA1 (40 hex digits + NUL). */
const char *sl__redis_script_source(void);
const char *sl__redis_script_sha(void);

/* How a decision call is sent: the script by its sha, the script's source,
 * or the native command of sluice-redis.so (src/redis_module/), which takes
 * the same arguments after the sha and answers the same. */
typedef enum sl__script_command {
    SL__SCRIPT_EVALSHA,    /* EVALSHA <sha> <n> ... */
    SL__SCRIPT_EVAL,       /* EVAL <source> <n> ... */
    SL__SCRIPT_MODULE,     /* SLUICE.DECIDE <n> ..., items packed (below) */
    SL__SCRIPT_MODULE_ARGS /* SLUICE.DECIDE <n> ..., the script's 3 arguments per item */
} sl__script_command;

/* The module's packed form (SL__SCRIPT_MODULE), what sluiced sends it: the
 * keys, now_us, m and the sets as for the script, then ONE argument of
 * SL__SCRIPT_PACKED_ITEM bytes per item (parameter set 1..m and group as
 * 16-bit, cost as 64-bit, little-endian), and the reply is ONE bulk
 * string of SL__SCRIPT_PACKED_REPLY bytes per item (the 6 reply integers,
 * 64-bit little-endian): Redis parses one argument per decision instead of
 * four and writes one reply instead of six integers. */
#define SL__SCRIPT_PACKED_ITEM  12
#define SL__SCRIPT_PACKED_REPLY (8 * SL__SCRIPT_REPLY_FIELDS)

#define SL__SCRIPT_MODULE_COMMAND "sluice.decide"

/* Appends the RESP command "EVALSHA sha n keys... now_us m sets... items..."
 * (or "EVAL <source> ...", or "SLUICE.DECIDE n keys...": how) for
 * items[0..n) to out, in one reserve (out->failed on allocation failure, or
 * n above SL__SCRIPT_MAX_ITEMS). now_us 0 = Redis TIME. Items with the same
 * parameters share one parameter set. Periods and start-empty origins are
 * sent in us, rounded up. */
void sl__redis_script_format_as(sl__buf *out, sl__script_command how, const sl__script_item *items,
                                size_t n, int64_t now_us);

/* sl__redis_script_format_as with EVAL (with_source) or EVALSHA. */
void sl__redis_script_format(sl__buf *out, bool with_source, const sl__script_item *items, size_t n,
                             int64_t now_us);

/* Writes the Redis key for (prefix, policy name, client key) into out:
 * "<prefix>{<client key>}:<policy>" so that every limit of one client key
 * shares a cluster slot. */
void sl__redis_key(sl__buf *out, const char *prefix, const char *policy, const void *key,
                   size_t keylen);

/* Returns 0 when the script decides limits with these parameters exactly as
 * the C core would, else the sl_params_validate() error, or:
 * - SL_EINVAL: a period that is not a whole microsecond (the formatter would
 *   round it up), a calendar month on another algorithm than a fixed
 *   window, a sliding log limit above 100000;
 * - SL_EOVERFLOW: a limit above 2^52, a bucket whose
 *   burst * period_us / gcd(limit, period_us) is above 2^52 (the script's
 *   doubles are exact to 2^53; the script answers those with an error), or
 *   a delay_after of 2^42 or more (it travels in the flags).
 * A start-empty origin may be any time: it is rounded up to the us, which
 * is harmless. Meant for checking a config that selects the Redis store. */
int sl__redis_script_check(const sl_params *p, bool calendar_month);

struct redisReply;
/* The small scripts' replies (lease.lua, retry.lua): true when r (with
 * the call's status, SL__REDIS_OK) is an array of at least n integers, into
 * v[0..n). */
bool sl__redis_reply_ints(const struct redisReply *r, int status, long long *v, size_t n);
/* The head of a small script's call (lease.lua, retry.lua): a RESP array of
 * nargs arguments, then EVAL and the source (with_source) or EVALSHA and its
 * sha1; the caller writes the nargs - 2 arguments that follow. */
void sl__redis_small_script_head(sl__buf *b, int nargs, bool with_source, const char *source,
                                 const char *sha1);
/* True when r is Redis's NOSCRIPT error (the script is to be sent again as
 * EVAL with its source). */
bool sl__redis_reply_noscript(const struct redisReply *r, int status);

/* Reads a script reply (or the module's packed one) into items[0..n)
 * (decision in ns, decided). Returns
 * 0, or SL_EPARSE when the reply is not the expected shape (an error reply
 * included: err gets its text), with a message in err (NUL-terminated,
 * truncated to errlen) and every item's decided false. Does not keep r. */
int sl__redis_script_parse(const struct redisReply *r, sl__script_item *items, size_t n, char *err,
                           size_t errlen);

#endif
