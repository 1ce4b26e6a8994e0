/* redis_script.h: the Lua script that decides limits inside Redis (one
 * atomic step per request, every algorithm), and the C side that formats
 * its EVALSHA/EVAL commands and reads its replies. Pure: no sockets.
 *
 * The script (src/store/decide.lua, embedded at build time) is called as
 *   EVALSHA <sha> <n> <key_1..key_n> <now_us> <item args x n>
 * now_us: "0" = use Redis TIME (the one clock of the fleet); tests pass an
 * explicit time. Per item, in order, 8 arguments:
 *   algorithm (sl_algorithm number), limit, period_us, burst, cost,
 *   flags (SL_START_EMPTY | SL_COUNT_REJECTED | SL_SCRIPT_CALENDAR_MONTH),
 *   origin_us, group (0 enforced, 1 shadow).
 * Groups (the semantics of sl__policy_check_all): group 0 is decided as one
 * all-or-nothing group; if it passes it is charged and group 1 is decided as
 * its own all-or-nothing group (charged when it passes); if group 0 refuses
 * nothing is charged (count_rejected tables excepted) and group 1 is only
 * looked at (cost 0). Every key gets a TTL (PEXPIRE) of the time after which
 * its state is the same as a fresh key's, so idle keys vanish.
 * Reply: an array of n arrays of 5 integers:
 *   allowed (0/1), limit, remaining, retry_after_us (-1: never, the cost
 *   exceeds the limit), reset_after_us. */
#ifndef SLUICE_STORE_REDIS_SCRIPT_H
#define SLUICE_STORE_REDIS_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/buf.h"
#include "sluice/limit.h"

#define SL_SCRIPT_CALENDAR_MONTH 0x100u /* flags: fixed window = the calendar month (UTC) */
#define SL_SCRIPT_ARGS_PER_ITEM  8

/* One limit of a script call. */
typedef struct sl_script_item {
    const sl_params *params; /* algorithm, rate, burst, flags, origin (ns) */
    bool calendar_month;     /* a calendar-month quota (fixed window of 31 days in the config) */
    const char *rkey;        /* the Redis key (already prefixed and hash-tagged) */
    size_t rkeylen;
    int64_t cost;
    unsigned group;       /* 0 enforced, 1 shadow */
    sl_decision decision; /* out (ns); retry_after -1 = never */
    bool decided;         /* out */
} sl_script_item;

/* The script's source text and its SHA1 (40 hex digits + NUL). */
const char *sl__redis_script_source(void);
const char *sl__redis_script_sha(void);

/* Appends the RESP command "EVALSHA sha n keys... now_us args..." (or, when
 * with_source, "EVAL <source> ...") for items[0..n) to out. now_us 0 = Redis
 * TIME. */
void sl__redis_script_format(sl_buf *out, bool with_source, const sl_script_item *items, size_t n,
                             int64_t now_us);

/* Writes the Redis key for (prefix, policy name, client key) into out:
 * "<prefix>{<client key>}:<policy>" so that every limit of one client key
 * shares a cluster slot. */
void sl__redis_key(sl_buf *out, const char *prefix, const char *policy, const void *key,
                   size_t keylen);

struct redisReply;
/* Reads a script reply into items[0..n) (decision, decided). Returns 0, or
 * -1 when the reply is not the expected shape (an error reply included),
 * with a message in err. */
int sl__redis_script_parse(const struct redisReply *r, sl_script_item *items, size_t n, char *err,
                           size_t errlen);

#endif
