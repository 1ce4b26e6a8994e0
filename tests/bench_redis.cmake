# The Redis CPU per decision benchmark (bench/redis/cpu.sh): a smoke run with
# tiny counts (tests/integration/bench_redis_cpu_test.sh) that checks the
# table has every row; no timing is asserted. It starts its own redis-server
# and sluiced on free loopback ports. The peer (rate-limiter-flexible from
# npm) is cached under the top-level build/, shared by every build directory;
# skipped (77) when npm cannot install it.
if(TARGET sluiced)
  add_test(NAME bench_redis_cpu_smoke
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/bench_redis_cpu_test.sh
            $<TARGET_FILE_DIR:sluiced> ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/build/bench-redis-node)
  set_tests_properties(bench_redis_cpu_smoke PROPERTIES LABELS "integration" TIMEOUT 300
                       SKIP_RETURN_CODE 77)
endif()
# bench/redis/module_instr.py (sluice-redis.so under callgrind, memory by value
# shape): a smoke run with tiny counts; skipped (77) without valgrind.
if(TARGET sluice_redis)
  add_test(NAME bench_module_instr_smoke
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/bench_module_instr_test.sh
            $<TARGET_FILE:sluice_redis> ${PROJECT_SOURCE_DIR})
  set_tests_properties(bench_module_instr_smoke PROPERTIES LABELS "integration" TIMEOUT 600
                       SKIP_RETURN_CODE 77)
endif()
