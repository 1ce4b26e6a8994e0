# The Redis store's hardening (issue 12, items 8 to 11): a healthy Redis
# under 200 connections is never declared down (default timeout, breaker on
# sustained failure), the first decisions after startup come from Redis,
# batched mode's overshoot bound for all six algorithms, and /readyz after a
# Redis Cluster failover. Real redis-server (and a real 3-master cluster from
# tests/integration/redis_cluster.py) and sluiced on loopback
# (tests/integration/redis_store_test.py; --only NAME runs one test).
find_program(SLUICE_REDIS_SERVER redis-server PATHS /usr/bin /usr/sbin)
sluiced_test(redis_store_integration redis_store_test.py
             LABELS integration TIMEOUT 180
             ARGS --redis-server ${SLUICE_REDIS_SERVER}
             PROPERTIES SKIP_RETURN_CODE 77)
