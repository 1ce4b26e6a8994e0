# libsluice-client and `sluice fetch`, included from tests/CMakeLists.txt.
# - test_client: the pure parts (dates, Retry-After, waits, budget, AIMD step,
#   RateLimit fields), exact, no network, no clock;
# - test_client_http: the whole client against an in-process HTTP server on
#   a loopback port, with a fake clock (every wait is checked, none is slept);
# - client_integration (label integration): `sluice fetch` against a small
#   Python server (Retry-After twice, HTTP-date, POST) and against sluiced
#   (AIMD converges without a storm of 429s), in real time;
# - client_example (labels integration;install): the C example of
#   docs/client.md, built against the installed library with pkg-config.
foreach(t test_client test_client_http)
  sluice_unit_test(${t})
  target_link_libraries(${t} PRIVATE sluice_client_static)
endforeach()

if(TARGET sluiced)
  add_test(NAME client_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/client_test.py
            $<TARGET_FILE:sluice_cli> $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR})
  set_tests_properties(client_integration PROPERTIES LABELS integration TIMEOUT 120)

  add_test(NAME client_example
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/client_example.sh ${PROJECT_BINARY_DIR}
            ${PROJECT_SOURCE_DIR} $<TARGET_FILE:sluiced>)
  set_tests_properties(client_example PROPERTIES LABELS "integration;install" TIMEOUT 120)
endif()
