# quota.cmake: Envoy's quota_mode on the decision engine's "any" groups
# (tests/unit/test_quota_mode.c, fake clock).
sluice_unit_test(test_quota_mode)
target_compile_definitions(test_quota_mode PRIVATE SLUICE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
# quota_integration (tests/integration/quota_test.py): the same through the
# real sluiced's POST /json, memory and Redis stores, the peer's own example
# config loaded unchanged.
if(TARGET sluiced)
  add_test(NAME quota_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/quota_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR})
  set_tests_properties(quota_integration PROPERTIES LABELS integration TIMEOUT 120)
endif()
