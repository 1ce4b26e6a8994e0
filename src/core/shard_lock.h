/* shard_lock.h: the keyed table's shard lock, a spin lock that hands over
 * rarely and never starves a waiter.
 *
 * Why: on one hot key every hand-over of the lock moves two cache lines (the
 * lock's and the state's) between CPUs, and on this class of machine one
 * transfer costs more than the whole critical section (a lookup in L1 and a
 * state step, ~60 instructions). A test-and-test-and-set lock whose waiter
 * polls the lock line after every pause pulls that line away again and again
 * and grabs the lock whenever it looks while the holder is between two
 * decisions (one hand-over per 70-450 decisions in bench/lock_handover.c).
 * So:
 *
 *   - a waiter polls the lock seldom (`SL__LOCK_POLL` pauses between looks),
 *     so the holder releases and takes the lock again with both lines in its
 *     own cache, for a stretch of decisions (one poll interval or more: 128
 *     pauses, 9.6 us on the Zen 5 of docs/BENCHMARKS.md), and the waiter
 *     takes it at a look that finds it free;
 *   - bounded waiting: a waiter that has looked `SL__LOCK_PATIENCE` times
 *     without winning queues by ticket (FIFO among such waiters); the head of
 *     that queue raises `want`, which closes the fast path to everyone else,
 *     and takes the lock at the next release. Every waiter is served after its
 *     patience plus, for itself and each impatient waiter ahead of it, one
 *     critical section of that waiter and at most one of each other thread
 *     (one that read `want` clear just before it was raised, or took the lock
 *     between one head's turn and the next head's raise): a bound in critical
 *     sections, whatever the scheduler does.
 *
 * Uncontended cost: lock = one load of `want` (the lock's own line) and an
 * atomic exchange, one branch on both; unlock = one release store. Mutual
 * exclusion is the exchange's: only the thread that turned `locked` from 0
 * to 1 holds it.
 * Memory order: acquire on taking, release on giving back, as any mutex. */
#ifndef SLUICE_CORE_SHARD_LOCK_H
#define SLUICE_CORE_SHARD_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>

/* One lock; zero-initialised (atomic_init to 0) is unlocked. `locked` and
 * `want` share the lock's line (the fast path reads both); the ticket
 * counters, touched only by impatient waiters, have a line of their own. */
typedef struct sl__shard_lock {
    _Alignas(64) atomic_uint locked; /* 1 while held */
    atomic_uint want;                /* 1: the queue's head waits; the fast path is closed */
    _Alignas(64) atomic_uint next;   /* tickets of impatient waiters */
    atomic_uint serving;             /* the ticket whose holder may raise want */
} sl__shard_lock;

/* Pauses between two looks at a held lock, and looks before a waiter queues
 * for its turn (a pause is 10-140 cycles, 75 ns on the Zen 5 of
 * docs/BENCHMARKS.md). 1024 pauses in all before a waiter queues, as with
 * the 32 x 32 of before; 128 x 8 measured 0.34-0.42 of the peer's time on
 * two threads on one hot key against 0.50-0.74 (docs/BENCHMARKS.md, session
 * 17). -D to try others. */
#ifndef SL__LOCK_POLL
#define SL__LOCK_POLL 128
#endif
#ifndef SL__LOCK_PATIENCE
#define SL__LOCK_PATIENCE 8
#endif

/* The contended path (shard_lock.c), after sl__shard_lock_try said no:
 * returns with l held. */
void sl__shard_lock_slow(sl__shard_lock *l);

static inline void sl__shard_lock_init(sl__shard_lock *l) {
    atomic_init(&l->locked, 0);
    atomic_init(&l->want, 0);
    atomic_init(&l->next, 0);
    atomic_init(&l->serving, 0);
}

/* The fast path alone: true with l held, or false with l not held (it was
 * held, or the queue's head waits: then a lock taken is given back at once).
 * The exchange runs whatever `want` says (two instructions fewer on the hot
 * path than testing first). A caller with a slow path of its own (the
 * table's check_fast) goes there on false and takes l with
 * sl__shard_lock_take. */
static inline bool sl__shard_lock_try(sl__shard_lock *l) {
    unsigned want = atomic_load_explicit(&l->want, memory_order_relaxed);
    unsigned was = atomic_exchange_explicit(&l->locked, 1, memory_order_acquire);
    if (__builtin_expect(want | was, 0)) {
        if (!was) atomic_store_explicit(&l->locked, 0, memory_order_release);
        return false;
    }
    return true;
}

/* Takes l; returns with it held. Never fails. */
static inline void sl__shard_lock_take(sl__shard_lock *l) {
    if (__builtin_expect(!sl__shard_lock_try(l), 0)) sl__shard_lock_slow(l);
}

/* Gives l back; the caller holds it. */
static inline void sl__shard_lock_give(sl__shard_lock *l) {
    atomic_store_explicit(&l->locked, 0, memory_order_release);
}

#endif
