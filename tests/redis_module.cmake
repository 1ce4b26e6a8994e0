# sluice-redis.so (src/redis_module/): SLUICE.DECIDE against the decision
# script on one redis-server started with the module and frozen_clock
# (tests/unit/test_redis_module.c: the same replies, states and TTLs by
# script, module and both in turn; the error texts; the key positions).
# decide_us.c itself too (pure: its sliding-log runs under the sanitizers)
sluice_frozen_redis_test(test_redis_module ${PROJECT_SOURCE_DIR}/src/redis_module/decide_us.c)
# replication to a replica without the module; module: require on a Redis
# without it (refused, /readyz degraded); module: auto with and without it
# (tests/integration/redis_module_test.py)
find_program(SLUICE_REDIS_SERVER redis-server PATHS /usr/bin /usr/sbin)
sluiced_test(redis_module_integration redis_module_test.py
             LABELS integration TIMEOUT 240
             ARGS $<TARGET_FILE:sluice_redis> --redis-server ${SLUICE_REDIS_SERVER})
