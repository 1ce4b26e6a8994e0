# signals.cmake (issue 17, first half): POST /v1/graphql through the real sluiced
# (tests/integration/graphql_http_test.py: examples/graphql.yaml as shipped, points
# budgets, refusals that charge nothing, /metrics), on the memory and the Redis
# store; and the near-limit signals, labels and promtool (signals_test.py).
if(TARGET sluiced)
  add_test(NAME graphql_http_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/graphql_http_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR})
  set_tests_properties(graphql_http_integration PROPERTIES LABELS "integration" TIMEOUT 120)

  find_program(SLUICE_REDIS_SERVER_SIGNALS redis-server PATHS /usr/bin /usr/sbin)
  if(SLUICE_REDIS_SERVER_SIGNALS)
    add_test(NAME graphql_http_integration_redis
      COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/graphql_http_test.py
              $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR})
    set_tests_properties(graphql_http_integration_redis PROPERTIES LABELS "integration"
                         TIMEOUT 120 ENVIRONMENT SLUICE_TEST_REDIS=1)
  endif()
endif()

# The engine's near-limit signals (policy/decide.h): the remaining-ratio
# histogram's integer bounds and sum, the near-limit sketch (labels, groups,
# shadow limits). Fake clock, memory store.
sluice_unit_test(test_signals)

# Near-limit signals, labels and promtool through the real sluiced
# (tests/integration/signals_test.py): sluice_decision_remaining_ratio's exact
# buckets, /v1/top?by=near, sluice_rule_decisions_total by rule, policy and tier,
# sluice_identity_refused_total, and `promtool check metrics` on the live /metrics
# (skipped without promtool: Debian's prometheus, in scripts/install-deps.sh).
if(TARGET sluiced)
  add_test(NAME signals_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/signals_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR})
  set_tests_properties(signals_integration PROPERTIES LABELS "integration" TIMEOUT 120)
  if(SLUICE_REDIS_SERVER_SIGNALS)
    add_test(NAME signals_integration_redis
      COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/signals_test.py
              $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR})
    set_tests_properties(signals_integration_redis PROPERTIES LABELS "integration"
                         TIMEOUT 120 ENVIRONMENT SLUICE_TEST_REDIS=1)
  endif()
endif()
