# Answers held until their release time, fairly across tenants
# (src/server/hold.c: GET /v1/auth with a leaky_queue's hold:): the order,
# groups, bounds and cancellation on a fake clock (test_hold); through a
# real nginx, auth_request to sluiced: the upstream sees the queue's
# spacing, a small tenant is not stuck behind a big one's burst, the bounds
# refuse at once, a closed connection frees its place (hold_integration).
sluice_unit_test(test_hold)

if(TARGET sluiced)
  find_program(SLUICE_NGINX nginx PATHS /usr/sbin /sbin)
  add_test(NAME hold_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/hold_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR} ${SLUICE_NGINX})
  set_tests_properties(hold_integration PROPERTIES LABELS integration TIMEOUT 120)
  # the same with the Redis store (the decision completes after the handler returns)
  add_test(NAME hold_integration_redis
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/hold_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR} ${SLUICE_NGINX})
  set_tests_properties(hold_integration_redis PROPERTIES LABELS integration TIMEOUT 120
                       ENVIRONMENT SLUICE_TEST_REDIS=1)
endif()
