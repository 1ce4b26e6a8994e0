/* config.h: the sluiced configuration model (DESIGN.md section 2) and its
 * YAML loader. Loading never aborts: every problem is reported as
 * "file:line: field: message" and the load fails as a whole. The embedded
 * default is examples/sluice.yaml, compiled in at build time. */
#ifndef SLUICE_POLICY_CONFIG_H
#define SLUICE_POLICY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/limit.h"

#define SL_POLICY_NAME_MAX 63 /* [a-z0-9_.-]+ */
#define SL_CONFIG_MAX_POLICIES 1024
#define SL_CONFIG_MAX_ERRORS 64
#define SL_CONFIG_MAX_BYTES (4u << 20) /* a config file larger than this is refused */

typedef struct sl_listen_config {
    bool enabled;   /* false for "off" */
    char host[64];  /* numeric IPv4 or IPv6 address (no brackets), e.g. "127.0.0.1", "::1" */
    uint16_t port;  /* 0 = any free port (tests) */
} sl_listen_config;

typedef struct sl_policy_config {
    char name[SL_POLICY_NAME_MAX + 1];
    sl_params params; /* algorithm, rate, burst, flags: SL_COUNT_REJECTED, SL_START_EMPTY.
                         Windows get burst 0 (a configured burst is ignored). With
                         "start: empty" the loader leaves params.origin 0: the server
                         sets it to the moment it creates the policy's table. */
    bool shadow;      /* decide, count and log, but always allow */
    int line;         /* line of the policy in its file (for messages) */
    char on_failure[8]; /* "open" | "closed" | "local", or "" (inherit store.redis.on_failure);
                           no effect until the Redis store exists */
} sl_policy_config;

typedef struct sl_limits_config {
    size_t max_header_bytes; /* HTTP request line + headers; 431 beyond. default 8 KiB */
    size_t max_body_bytes;   /* HTTP body; 413 beyond. default 64 KiB */
    size_t max_resp_frame;   /* one RESP command (all its bytes); error beyond. default 64 KiB */
    unsigned max_connections;/* per process; new ones are closed at once beyond. default 10000 */
    int64_t idle_timeout;    /* ns without a byte from the client; 408 / close. default 60 s */
    int64_t header_timeout;  /* ns to receive a whole HTTP request head; 408. default 10 s */
} sl_limits_config;

typedef struct sl_config {
    char source[256];         /* the file name, or "<embedded default>" */
    sl_listen_config http, grpc, resp;
    unsigned workers;         /* 0 = "auto": one per core */
    char store_type[16];      /* "memory" ("redis" arrives with the Redis store) */
    size_t max_memory;        /* store.max_memory: cap of each policy's table, bytes */
    sl_limits_config limits;
    char log_level[8];        /* "error" | "warn" | "info" | "debug" */
    sl_policy_config *policies;
    size_t npolicies;
} sl_config;

typedef struct sl_config_errors {
    size_t n;                            /* errors found (may exceed the stored ones) */
    char msg[SL_CONFIG_MAX_ERRORS][256]; /* "file:line: field: message" */
} sl_config_errors;

/* Parses YAML text. `source` names it in messages. Returns 0 and *out (free
 * with sl__config_free), or -1 with errs filled (*out NULL). */
int sl__config_parse(const char *text, size_t len, const char *source, sl_config **out,
                     sl_config_errors *errs);

/* Reads and parses a file (at most SL_CONFIG_MAX_BYTES). Same contract. */
int sl__config_load(const char *path, sl_config **out, sl_config_errors *errs);

/* The embedded default config (the text of examples/sluice.yaml). */
int sl__config_load_default(sl_config **out, sl_config_errors *errs);
extern const char sl__default_config_text[];

void sl__config_free(sl_config *c);

/* The policy named `name` (len bytes), or NULL. */
const sl_policy_config *sl__config_policy(const sl_config *c, const char *name, size_t len);

#endif
