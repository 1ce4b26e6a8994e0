# The Envoy rate limit service: the rule-file loader and matching
# (tests/unit/test_domains.c), the gRPC session on raw HTTP/2 bytes from an
# nghttp2 client (test_grpc.c), and the real server with a real gRPC client
# (tests/integration/grpc_test.sh: @grpc/grpc-js from npm, cached in the build
# tree). The client is cached under the top-level build/ so that every build
# directory shares one copy.
sluice_unit_test(test_domains)
target_compile_definitions(test_domains PRIVATE SLUICE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
sluice_unit_test(test_grpc)

if(TARGET sluiced)
  add_test(NAME grpc_integration
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/grpc_test.sh
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/build)
  # also under TSan (label concurrency): workers share the rule limits' tables
  set_tests_properties(grpc_integration PROPERTIES LABELS "integration;concurrency" TIMEOUT 300
                       SKIP_RETURN_CODE 77)
endif()

if(TARGET sluiced)
  # the same tests with the Redis store (a redis-server on a free loopback port)
  add_test(NAME grpc_integration_redis
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/grpc_test.sh
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/build redis)
  set_tests_properties(grpc_integration_redis PROPERTIES LABELS "integration;concurrency"
                       TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
