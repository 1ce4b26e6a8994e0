/* memory.h: the memory store (store.type: memory): every limit's state in
 * its own in-memory table (sl__store_limit.table), decided inline under the
 * group contract of store.h. Calendar-month quotas run on a calendar clock
 * that maps month m of UTC time to [m * 31d, m * 31d + length of m); a
 * group of several limits is one sl__table_check_group (core/table_any.h:
 * every shard involved locked at once, each item at its own clock), in the
 * order given, quotas like any other limit. A single check of a quota still
 * takes one of its key stripes (sl__store_limit.stripes also marks a limit
 * as a calendar quota), which groups no longer need. Also what batched mode
 * (batch.h) decides with. */
#ifndef SLUICE_STORE_MEMORY_H
#define SLUICE_STORE_MEMORY_H

#include "store/store.h"

/* The one memory store (stateless, shared by every worker; its free does
 * nothing). */
sl__store *sl__memory_store(void);

/* The memory store's decide: c's items decided in their tables, c->done
 * called before it returns. */
void sl__memory_decide(sl__store_call *c);

/* The memory store's forget (store.h): every item's key out of its
 * limit's table (and out of its local fallback table, if it has one, when
 * `fallback`); c->done before it returns. */
void sl__memory_forget(sl__store_call *c, bool fallback);

/* A look at (limit, key) at now without charging (cost 0; the calendar
 * clock for calendar quotas). Returns sl_table_check's code. */
int sl__memory_peek(sl__store_limit *l, const void *key, size_t keylen, int64_t now,
                    sl_decision *d);

/* Batched mode: charges n units that other servers consumed to (l, key),
 * as far as the state can take them now (never beyond empty). Returns the
 * rest: the debt to carry, for every algorithm (a window's debt is paid from
 * the next windows, as a bucket's from its refill), at most `others` x the
 * limit (others: the other servers there may be, at least 1), so that a
 * wrong count cannot lock a key for long. */
int64_t sl__memory_charge_shared(sl__store_limit *l, const void *key, size_t keylen, int64_t n,
                                 int64_t now, unsigned others);

/* Calendar arithmetic (UTC, proleptic Gregorian): the month containing
 * `now` (ns since the Unix epoch): its index (months since January 1970),
 * its start and its length in ns. */
void sl__calendar_month(int64_t now, int64_t *index, int64_t *start, int64_t *length);

#endif
