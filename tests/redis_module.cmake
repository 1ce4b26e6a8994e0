# sluice-redis.so (src/redis_module/): SLUICE.DECIDE against the decision
# script on one redis-server started with the module and frozen_clock
# (tests/unit/test_redis_module.c: the same replies, states and TTLs by
# script, module and both in turn; the error texts; the key positions).
sluice_unit_test(test_redis_module)
# decide_us.c itself too (pure: its sliding-log runs under the sanitizers)
target_sources(test_redis_module PRIVATE ${PROJECT_SOURCE_DIR}/src/redis_module/decide_us.c)
add_dependencies(test_redis_module frozen_clock sluice_redis)
target_compile_definitions(test_redis_module PRIVATE
  FROZEN_CLOCK_LIB="$<TARGET_FILE:frozen_clock>"
  SLUICE_REDIS_MODULE="$<TARGET_FILE:sluice_redis>")
set_tests_properties(test_redis_module PROPERTIES LABELS unit TIMEOUT 300)
# replication to a replica without the module; module: require on a Redis
# without it (refused, /readyz degraded); module: auto with and without it
# (tests/integration/redis_module_test.py)
if(TARGET sluiced)
  find_program(SLUICE_REDIS_SERVER redis-server PATHS /usr/bin /usr/sbin)
  add_test(NAME redis_module_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/redis_module_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR} $<TARGET_FILE:sluice_redis>
            --redis-server ${SLUICE_REDIS_SERVER})
  set_tests_properties(redis_module_integration PROPERTIES LABELS integration TIMEOUT 240)
endif()
