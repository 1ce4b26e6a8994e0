# The Redis store's hardening (issue 12, items 8 to 11): a healthy Redis
# under 200 connections is never declared down (default timeout, breaker on
# sustained failure), the first decisions after startup come from Redis,
# batched mode's overshoot bound for all six algorithms, and /readyz after a
# Redis Cluster failover. Real redis-server (and a real 3-master cluster from
# tests/integration/redis_cluster.py) and sluiced on loopback
# (tests/integration/redis_store_test.py; --only NAME runs one test).
if(TARGET sluiced)
  find_program(SLUICE_REDIS_SERVER redis-server PATHS /usr/bin /usr/sbin)
  add_test(NAME redis_store_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/redis_store_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR}
            --redis-server ${SLUICE_REDIS_SERVER})
  set_tests_properties(redis_store_integration PROPERTIES LABELS integration TIMEOUT 180
    SKIP_RETURN_CODE 77)
endif()
