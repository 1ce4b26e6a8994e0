# input.cmake: the strictness of sluiced's inputs (issue 12, items 6, 7, 16):
# NUL bytes in keys on every path, /metrics beyond 1024 policies, /v1/top's
# UTF-8, POST /v1/check's trailing bytes and costs, /v1/auth's refusals, one
# RateLimit-Policy text (tests/integration/input_test.py, the real sluiced with
# curl, nghttp and raw sockets). A second run on the Redis store. The JSON body
# scan and the JSON string writer on their own: tests/unit/test_http_body.c.
sluice_unit_test(test_http_body)
# gRPC descriptors with NUL bytes, on sl__grpc_call: tests/unit/test_grpc_nul.c.
sluice_unit_test(test_grpc_nul)
if(TARGET sluiced)
  add_test(NAME input_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/input_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR})
  set_tests_properties(input_integration PROPERTIES LABELS integration TIMEOUT 180)
  add_test(NAME input_integration_redis
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/input_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR})
  set_tests_properties(input_integration_redis PROPERTIES LABELS integration TIMEOUT 180
                       ENVIRONMENT SLUICE_TEST_REDIS=1)
endif()
