# The retry budget (sluice/retry.h): the library on a fake clock against a
# reference model; its threads test also runs under TSan.
sluice_unit_test(test_retry)
set_tests_properties(test_retry PROPERTIES LABELS "unit;concurrency")

# Retry budgets in sluiced (retry_budget:): /v1/check, the counters, reloads,
# the config's errors; a real redis-server shared by two sluiced, and killed
# for each fail mode.
if(TARGET sluiced)
  add_test(NAME retry_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/retry_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR})
  set_tests_properties(retry_integration PROPERTIES LABELS "integration" TIMEOUT 180)
endif()

# test_retry_redis: the Redis store's retry script (src/store/retry.lua) against
# the library on random traces, on a private redis-server.
sluice_unit_test(test_retry_redis)
set_tests_properties(test_retry_redis PROPERTIES LABELS unit TIMEOUT 180)

# Load shedding and the retry budget on /v1/auth through a real nginx:
# examples/nginx/protected.yaml with sluice.conf (403 + Sluice-Shed /
# Sluice-Retry-Budget turned into 503 / 429), a rule's priority:.
if(TARGET sluiced)
  find_program(SLUICE_NGINX nginx PATHS /usr/sbin /sbin)
  add_test(NAME protection_nginx_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/protection_nginx_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR} ${SLUICE_NGINX})
  set_tests_properties(protection_nginx_integration PROPERTIES LABELS integration TIMEOUT 120)
endif()
