# policy.cmake: the policy layer against the real sluiced (issue 12): the per-IP
# fence in front of the API key check (a flood of random keys is fenced, refused
# keys are counted) and shadow mode over Envoy's rules (top-level shadow, rule
# metrics, /v1/top?domain=, rate-limited shadow log). tests/integration/policy_test.py,
# raw pipelined sockets; also with the Redis store, and under TSan (label
# concurrency): workers share the fence's table, the rules' sketch and the log budget.
if(TARGET sluiced)
  add_test(NAME policy_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/policy_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR})
  set_tests_properties(policy_integration PROPERTIES LABELS "integration;concurrency" TIMEOUT 120)

  find_program(SLUICE_REDIS_SERVER_POLICY redis-server PATHS /usr/bin /usr/sbin)
  if(SLUICE_REDIS_SERVER_POLICY)
    add_test(NAME policy_integration_redis
      COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/policy_test.py
              $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR})
    set_tests_properties(policy_integration_redis PROPERTIES LABELS "integration;concurrency"
                         TIMEOUT 120 ENVIRONMENT SLUICE_TEST_REDIS=1)
  endif()
endif()

# The budget of the rate-limited log that shadow mode writes to (src/util/log.c).
sluice_unit_test(test_log)
