# Lifecycle: reloads owned by the main loop (concurrent and pipelined POST
# /v1/reload, answered at SIGTERM too), admin.reload, state kept across a
# store.max_memory change, and check-config (sluiced and sluice alike). Also
# under TSan (label concurrency): reload asks cross threads.
if(TARGET sluiced AND TARGET sluice_cli)
  add_test(NAME lifecycle_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/lifecycle_test.py
            $<TARGET_FILE:sluiced> $<TARGET_FILE:sluice_cli> ${PROJECT_SOURCE_DIR})
  set_tests_properties(lifecycle_integration PROPERTIES LABELS "integration;concurrency" TIMEOUT 300)
endif()
