# Redis Cluster: the slot routing pieces (tests/unit/test_redis_cluster.c), and
# the self-test of the cluster harness the cluster integration tests use
# (tests/integration/redis_cluster.py: a real 3-master, 3-replica Redis 7
# cluster on loopback, slot migration with ASK, failover).
sluice_unit_test(test_redis_cluster)

# Starts and stops 6 redis-server processes (about 5-10 s); exits 77 (skipped)
# when redis-server or redis-cli is not installed.
add_test(NAME redis_cluster_harness
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/redis_cluster.py --self-test)
set_tests_properties(redis_cluster_harness PROPERTIES LABELS integration TIMEOUT 120
  SKIP_RETURN_CODE 77)

# sluiced on a real 3-master Redis Cluster: keys spread over the masters,
# exact counts, a slot migration (ASK while half-way, MOVED after) and a
# master killed (failover) (tests/integration/cluster_store_test.py).
sluiced_test(cluster_store_integration cluster_store_test.py
             LABELS integration TIMEOUT 180
             PROPERTIES SKIP_RETURN_CODE 77)
