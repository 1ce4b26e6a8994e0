# identity.cmake: who is counted (issue 5): address, CIDR and forwarded-header
# parsing (test_identity), the request rules with API keys, tiers, quotas,
# costs, exemptions and shadow mode on a fake clock (test_rules), and a real
# nginx in front of a small upstream with sluiced behind auth_request
# (tests/integration/nginx_test.py).
sluice_unit_test(test_identity)
sluice_unit_test(test_rules)
target_compile_definitions(test_rules PRIVATE SLUICE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
# the layered quota check under threads: also under TSan
set_tests_properties(test_rules PROPERTIES LABELS "unit;concurrency")

if(TARGET sluiced)
  find_program(SLUICE_NGINX nginx PATHS /usr/sbin /sbin)
  # 240 s: per_ip's two cases may each wait for a fresh minute (harness.in_one_window)
  add_test(NAME nginx_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/nginx_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR} ${SLUICE_NGINX})
  set_tests_properties(nginx_integration PROPERTIES LABELS integration TIMEOUT 240)
endif()

if(TARGET sluiced)
  # the same nginx tests with the Redis store (/v1/auth's layered limits in one script call)
  add_test(NAME nginx_integration_redis
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/nginx_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR} ${SLUICE_NGINX})
  set_tests_properties(nginx_integration_redis PROPERTIES LABELS integration TIMEOUT 240
                       ENVIRONMENT SLUICE_TEST_REDIS=1)
endif()
