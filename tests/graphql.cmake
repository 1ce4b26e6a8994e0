# GraphQL query cost (include/sluice/graphql.h, src/graphql/): the cmocka unit
# test, and the differential check against graphql-js from npm
# (tests/integration/graphql_diff.sh: same accept/reject on the corpus in
# tests/graphql/corpus/ and on generated documents; graphql cached under the
# top-level build/graphql-node, skipped (77) when npm cannot install it).
sluice_unit_test(test_graphql)

add_executable(gql_accept graphql/gql_accept.c)
target_link_libraries(gql_accept PRIVATE sluice_static)
add_test(NAME graphql_differential
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/graphql_diff.sh $<TARGET_FILE:gql_accept>
          ${CMAKE_CURRENT_SOURCE_DIR}/graphql ${PROJECT_SOURCE_DIR}/build/graphql-node)
set_tests_properties(graphql_differential PROPERTIES LABELS "unit" TIMEOUT 300
                     SKIP_RETURN_CODE 77)
