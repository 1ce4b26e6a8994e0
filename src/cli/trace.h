/* trace.h: the traffic a simulation replays: requests with a time (ns from
 * the trace's start), a key and a cost. Either one of the built-in traces of
 * the seed (bursty, edge, steady, poisson) or a CSV file:
 *
 *   # comment lines and blank lines are ignored
 *   time,key,cost          <- optional header (also "time" or "time,key")
 *   0.250,alice,1          <- time in seconds (at most 9 decimals), key, cost
 *   0.5                    <- key defaults to "k", cost to 1
 *
 * Lines need not be sorted: requests are sorted by time, stably (equal
 * times keep their order in the file). Everything is bounded (see the
 * TRACE_MAX_* constants); errors say "file:line: message". */
#ifndef SLUICE_CLI_TRACE_H
#define SLUICE_CLI_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRACE_MAX_LINE     1024                            /* bytes per line, without the newline */
#define TRACE_MAX_REQUESTS 1000000                         /* requests per trace */
#define TRACE_MAX_KEYS     10000                           /* distinct keys per trace */
#define TRACE_MAX_KEY_LEN  256                             /* bytes per key */
#define TRACE_MAX_COST     1000000000                      /* cost of one request */
#define TRACE_MAX_TIME     (INT64_C(1000000) * 1000000000) /* 1,000,000 s (11.6 days), in ns */

typedef struct sl__cli_trace_req {
    int64_t t;        /* ns from the start of the trace, 0..TRACE_MAX_TIME */
    int64_t cost;     /* 0..TRACE_MAX_COST */
    uint32_t key;     /* index into trace.keys */
    uint32_t line;    /* line in the file (0 for built-in traces) */
    const char *text; /* the time exactly as written in the file; NULL for built-ins */
} sl__cli_trace_req;

typedef struct sl__cli_trace {
    char name[64];           /* "bursty", or the file's base name */
    sl__cli_trace_req *reqs; /* sorted by t, stably */
    size_t n;
    char **keys; /* distinct keys, in order of first appearance */
    size_t nkeys;
    char *arena; /* storage for the time texts of a file trace */
} sl__cli_trace;

/* The built-in traces and what they are for. */
typedef enum sl__cli_trace_builtin {
    TRACE_BURSTY,  /* ~60 requests in 10 s: bursts and quiet spells, one burst over the 5 s edge */
    TRACE_EDGE,    /* two bursts of 10 just before and just after the 5 s edge */
    TRACE_STEADY,  /* 8 per second for 10 s */
    TRACE_POISSON, /* random arrivals at --mean-rate for 10 s (ms resolution) */
    TRACE_NONE
} sl__cli_trace_builtin;

/* The built-in trace named `name`, or TRACE_NONE. */
sl__cli_trace_builtin sl__cli_trace_builtin_find(const char *name);

/* Builds a built-in trace. mean_rate_milli (requests per 1000 s, i.e. per
 * second times 1000) and seed are used by poisson only. Returns 0, or
 * SL_ENOMEM (message in err; SL_EINVAL for TRACE_NONE). */
int sl__cli_trace_builtin_make(sl__cli_trace_builtin which, int64_t mean_rate_milli, uint64_t seed,
                               sl__cli_trace *out, char *err, size_t errlen);

/* Loads a CSV trace. Returns 0, or a negative SL_E* code with
 * "path:line: message" (or "path: message") in err: SL_EINVAL (the file
 * cannot be opened or read, is too large, or holds no request), SL_EPARSE
 * (a line that is not time[,key[,cost]] within the bounds), SL_ETOOMANY
 * (more than TRACE_MAX_REQUESTS requests or TRACE_MAX_KEYS keys), SL_ENOMEM.
 * Nothing to free on failure. */
int sl__cli_trace_load_file(const char *path, sl__cli_trace *out, char *err, size_t errlen);

/* Parses CSV text already in memory (for tests); `name` is used in messages
 * as the file name. Same rules and bounds as sl__cli_trace_load_file. */
int sl__cli_trace_parse(const char *name, const char *text, size_t len, sl__cli_trace *out,
                        char *err, size_t errlen);

void sl__cli_trace_free(sl__cli_trace *t);

/* Writes a request's time as the log shows it: the original text for a file
 * trace, seconds with 3 decimals for a built-in one. Returns buf. */
const char *sl__cli_trace_time_text(const sl__cli_trace_req *r, char *buf, size_t size);

#endif
