# sluiced: integration tests against the real server with real clients
# (curl, redis-cli, raw sockets). See tests/integration/sluiced_test.py. Also
# run under TSan (label concurrency): workers, reload and CL.THROTTLE share state.
if(TARGET sluiced)
  add_test(NAME sluiced_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/sluiced_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR})
  set_tests_properties(sluiced_integration PROPERTIES LABELS "integration;concurrency" TIMEOUT 300)
endif()

if(TARGET sluiced)
  # the same tests with the Redis store (answers written when Redis has decided)
  add_test(NAME sluiced_integration_redis
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/sluiced_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR})
  set_tests_properties(sluiced_integration_redis PROPERTIES LABELS "integration;concurrency"
                       TIMEOUT 300 ENVIRONMENT SLUICE_TEST_REDIS=1)
endif()
