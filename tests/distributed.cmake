# Several sluiced sharing limits through one Redis (store.type: redis):
# exact totals under hundreds of concurrent clients for every algorithm, the
# seed's naive GET-then-SET limiter as the control that over-admits, Redis
# killed and SIGSTOPped mid-load (fail modes, timeouts, breaker, /readyz,
# recovery), the deny cache, batched sync's overshoot bound, and
# examples/distributed/ behind nginx. A real redis-server and nginx on
# ephemeral loopback ports (tests/integration/distributed_test.py; --only NAME
# runs one test).
find_program(SLUICE_NGINX nginx PATHS /usr/sbin /sbin)
find_program(SLUICE_REDIS_SERVER redis-server PATHS /usr/bin /usr/sbin)
sluiced_test(distributed_integration distributed_test.py
             LABELS integration TIMEOUT 240
             ARGS ${SLUICE_NGINX} --redis-server ${SLUICE_REDIS_SERVER})
# the exactness cases again with sluice-redis.so loaded and required
# (every decision a SLUICE.DECIDE call: store.redis.module: require)
sluiced_test(distributed_integration_module distributed_test.py
             LABELS integration TIMEOUT 240
             ARGS ${SLUICE_NGINX} --redis-server ${SLUICE_REDIS_SERVER}
                  --redis-module $<TARGET_FILE:sluice_redis>
                  --only exact_one_key --only exact_many_keys --only redis_killed)
