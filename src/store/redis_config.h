/* redis_config.h: the settings of the Redis store (store.redis in the
 * config, docs/configuration.md). Defined here, below the policy layer, so
 * that the store needs nothing from above; policy/config.h embeds them in
 * the config model and its loader fills them. */
#ifndef SLUICE_STORE_REDIS_CONFIG_H
#define SLUICE_STORE_REDIS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL__REDIS_MAX_SEEDS 16
#define SL__REDIS_HOST_MAX  255

typedef enum sl__fail_mode {
    SL__FAIL_OPEN = 0,
    SL__FAIL_CLOSED = 1,
    SL__FAIL_LOCAL = 2
} sl__fail_mode;

/* store.redis.module: whether decisions go as SLUICE.DECIDE (sluice-redis.so,
 * src/redis_module/) or as the script (EVALSHA). auto: the module where the
 * node has it (COMMAND INFO at every connect), else the script; require:
 * only the module (a node without it is not decided on: fail modes, and
 * /readyz says degraded); off: only the script. */
typedef enum sl__redis_module_mode {
    SL__REDIS_MODULE_AUTO = 0,
    SL__REDIS_MODULE_REQUIRE = 1,
    SL__REDIS_MODULE_OFF = 2
} sl__redis_module_mode;

typedef struct sl__redis_addr {
    char host[SL__REDIS_HOST_MAX + 1]; /* name or address; "" with unix_path */
    uint16_t port;
} sl__redis_addr;

typedef struct sl__redis_config {
    /* single node: url redis://[[user]:password@]host[:port][/db] or unix://path */
    sl__redis_addr addr;
    char unix_path[256];
    unsigned db;
    char user[128], password[128]; /* "" = no AUTH */
    /* cluster: seed nodes (any reachable one gives the slot map) */
    bool cluster;
    sl__redis_addr seeds[SL__REDIS_MAX_SEEDS];
    size_t nseeds;
    int64_t timeout;              /* ns per Redis call (default 250 ms) */
    sl__fail_mode on_failure;     /* default for policies without their own (default local) */
    unsigned expected_instances;  /* local fallback limit = limit / this (default 1) */
    bool batched;                 /* sync: batched */
    int64_t sync_interval;        /* ns between batched syncs (default 100 ms) */
    char prefix[64];              /* of every Redis key (default "sluice:") */
    unsigned breaker_failures;    /* failures without a success that open the breaker (default 5) */
    int64_t breaker_window;       /* ns they must span at least (default 500 ms) */
    int64_t breaker_cooldown;     /* ns before a probe call (default 1 s) */
    size_t deny_cache;            /* entries per worker; 0 = off (default 65536) */
    sl__redis_module_mode module; /* default auto */
    /* Tests only, not reachable from the config file (the loader leaves it
       false): send each script call the worker's clock of its first request
       (sl__store_call.now, ns, rounded down to whole us; must be >= 1 us)
       instead of 0 (= Redis TIME), so that a test can drive the Redis store
       with a fake clock (tests/unit/test_differential.c). */
    bool script_now;
} sl__redis_config;

#endif
