/* nginx_replay.c: the judge of tests/integration/nginx_delay_test.py. Reads
 * what a real nginx did with `limit_req zone=z burst=B delay=D` on a request
 * schedule (the time it read each request, whether it refused it, the delay
 * it applied) and replays the same times through sluice's leaky queue as
 * docs/nginx.md translates it (rate R/s, burst B+1, delay_after D, an
 * sl_table of libsluice); exits 1 at the first request sluice answers
 * otherwise, printing the schedule.
 *
 * nginx reads two clocks: it decides on its monotonic milliseconds, and the
 * times the test has (its access log: $msec - $request_time) are its wall
 * milliseconds, read at the same instant. Both are whole ms, so a
 * difference of two readings differs between the clocks by at most 1 ms:
 * a request whose answer differs at its logged time must be answered as
 * nginx did at that time 1 ms earlier or later (the replay then goes on
 * with that time). Requests logged at one ms may have been read at one
 * instant: where the request alone does not agree at a time, it is tried
 * with the requests before it at its logged ms moved there too (each of
 * them answered as nginx did at the new time). Under load, #6 and #7 of one
 * schedule were logged at 400 ms and decided at 399 on nginx's clock: #7
 * was a refusal only there, and #7 alone at 399 would have come before #6
 * (tests/peers/nginx_replay_cases.txt). Delays must agree within TOL_T of
 * an emission interval (1/R: one request more or less in the queue is a
 * whole interval).
 *
 * Input (stdin), per schedule (lines starting with # between schedules are
 * comments):
 *   schedule NAME R B D
 *   T_MS REFUSED DELAY_MS      one line per request, sorted by T_MS (ms
 *                              since the first; requests of one ms in
 *                              nginx's order: accepted first, by delay)
 *   end
 * Output: one line per schedule ("NAME: n requests, r refused, d delayed,
 * s shifted by 1 ms, delays within x ms"). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/sluice.h"

#define MAX_REQ 512
#define NS_MS   INT64_C(1000000)
#define T0_MS   INT64_C(1000000) /* replay times start here (any positive time) */
#define TOL_T   4                /* delays agree within 1/TOL_T of an emission interval */

typedef struct req {
    int64_t t_ms;
    int refused;
    int64_t delay_ms;
} req;

typedef struct sched {
    char name[64];
    int64_t rate, burst, delay_after; /* nginx's R, B, D */
    size_t n;
    req r[MAX_REQ];
} sched;

/* sluice's answer to the last of times[0..n) (ms), the others replayed
 * before it on a fresh key: 1 refused, else 0 and its delay_ms (rounded up,
 * as /v1/check's delay_ms). */
static int answer(const sched *s, const int64_t *times, size_t n, int64_t *delay_ms) {
    sl_table_options o = {.params = {.algorithm = SL_LEAKY_QUEUE,
                                     .rate = {s->rate, SL_NS_PER_SEC},
                                     .burst = s->burst + 1,
                                     .delay_after = s->delay_after},
                          .seed = 1};
    sl_table *t = NULL;
    int rc = sl_table_create(&o, &t);
    if (rc) {
        fprintf(stderr, "nginx_replay: %s: sl_table_create: %s\n", s->name, sl_strerror(rc));
        exit(2);
    }
    sl_decision d = {0};
    for (size_t i = 0; i < n; i++) {
        rc = sl_table_check(t, "k", 1, 1, (T0_MS + times[i]) * NS_MS, &d);
        if (rc) {
            fprintf(stderr, "nginx_replay: %s: sl_table_check: %s\n", s->name, sl_strerror(rc));
            exit(2);
        }
    }
    sl_table_destroy(t);
    *delay_ms = d.allowed ? (d.delay + NS_MS - 1) / NS_MS : 0;
    return !d.allowed;
}

static void print_schedule(const sched *s, size_t upto, const int64_t *times) {
    fprintf(stderr, "  limit_req rate=%" PRId64 "r/s burst=%" PRId64 " delay=%" PRId64 "\n",
            s->rate, s->burst, s->delay_after);
    for (size_t i = 0; i <= upto && i < s->n; i++)
        fprintf(
            stderr,
            "  #%zu at %" PRId64 " ms (replayed at %" PRId64 "): nginx %s delay %" PRId64 " ms\n",
            i, s->r[i].t_ms, times[i], s->r[i].refused ? "refused" : "accepted", s->r[i].delay_ms);
}

/* 1 if sluice answers request i of s, replayed at times[0..i], as nginx
 * did (refused alike; accepted with delays within tol ms); *rf, *dl: its
 * answer, *diff: how far its delay is from nginx's. */
static int agrees(const sched *s, const int64_t *times, size_t i, int64_t tol, int *rf, int64_t *dl,
                  int64_t *diff) {
    const req *q = &s->r[i];
    *rf = answer(s, times, i + 1, dl);
    *diff = *dl > q->delay_ms ? *dl - q->delay_ms : q->delay_ms - *dl;
    return *rf == q->refused && (*rf || *diff <= tol);
}

/* Replays s; 0 when sluice answers every request as nginx did. */
static int judge(const sched *s) {
    static int64_t times[MAX_REQ], saved[MAX_REQ];
    int64_t tol = 1000 / s->rate / TOL_T, worst = 0;
    size_t refused = 0, delayed = 0, shifted = 0;
    for (size_t i = 0; i < s->n; i++) {
        static const int64_t offsets[3] = {0, -1, 1};
        const req *q = &s->r[i];
        int matched = 0;
        /* the requests before i logged at its ms: j0..i-1 */
        size_t first = i;
        while (first > 0 && s->r[first - 1].t_ms == q->t_ms) first--;
        for (int k = 0; k < 6 && !matched; k++) {
            int64_t t = q->t_ms + offsets[k / 2];
            /* request i alone, then with the requests of its logged ms */
            size_t j0 = k % 2 ? first : i;
            if (k % 2 && j0 == i) continue;
            if (j0 > 0 && times[j0 - 1] > t) continue; /* nginx's order stays */
            memcpy(saved + j0, times + j0, (i - j0) * sizeof *times);
            int ok = 1, rf;
            int64_t dl, diff, worst_here = 0;
            for (size_t j = j0; j <= i && ok; j++) {
                times[j] = t;
                ok = agrees(s, times, j, tol, &rf, &dl, &diff);
                if (ok && !rf && diff > worst_here) worst_here = diff;
            }
            if (ok) {
                matched = 1;
                shifted += (i - j0) + (k > 1);
                if (worst_here > worst) worst = worst_here;
            } else {
                memcpy(times + j0, saved + j0, (i - j0) * sizeof *times);
            }
        }
        if (!matched) {
            times[i] = q->t_ms;
            int64_t got_delay;
            int got_refused = answer(s, times, i + 1, &got_delay);
            fprintf(stderr,
                    "nginx_replay: %s: request #%zu at %" PRId64 " ms: nginx %s (delay %" PRId64
                    " ms), sluice %s (delay_ms %" PRId64 "), also 1 ms either side (tolerance "
                    "%" PRId64 " ms)\n",
                    s->name, i, q->t_ms, q->refused ? "refused" : "accepted", q->delay_ms,
                    got_refused ? "refused" : "accepted", got_delay, tol);
            print_schedule(s, i, times);
            return 1;
        }
        refused += (size_t)q->refused;
        delayed += q->delay_ms > 0;
    }
    printf("%s: %zu requests, %zu refused, %zu delayed, %zu shifted by 1 ms, delays within %" PRId64
           " ms (tolerance %" PRId64 ")\n",
           s->name, s->n, refused, delayed, shifted, worst, tol);
    return 0;
}

int main(void) {
    static sched s;
    char line[256];
    int failed = 0, in = 0, nsched = 0;
    while (fgets(line, sizeof line, stdin)) {
        if (!in) {
            if (sscanf(line, "schedule %63s %" SCNd64 " %" SCNd64 " %" SCNd64, s.name, &s.rate,
                       &s.burst, &s.delay_after) == 4) {
                if (s.rate < 1 || s.rate > 1000 || 1000 % s.rate || s.burst < 0 ||
                    s.delay_after < 0 || s.delay_after > s.burst) {
                    fprintf(stderr, "nginx_replay: %s: bad parameters\n", s.name);
                    return 2;
                }
                s.n = 0;
                in = 1;
            } else if (line[0] != '\n' && line[0] != '#') {
                fprintf(stderr, "nginx_replay: expected a schedule line, got %s", line);
                return 2;
            }
            continue;
        }
        if (strncmp(line, "end", 3) == 0) {
            failed |= judge(&s);
            nsched++;
            in = 0;
            continue;
        }
        req *q = &s.r[s.n];
        if (s.n == MAX_REQ ||
            sscanf(line, "%" SCNd64 " %d %" SCNd64, &q->t_ms, &q->refused, &q->delay_ms) != 3) {
            fprintf(stderr, "nginx_replay: %s: bad request line %s", s.name, line);
            return 2;
        }
        s.n++;
    }
    if (in || nsched == 0) {
        fprintf(stderr, "nginx_replay: no complete schedule\n");
        return 2;
    }
    return failed;
}
