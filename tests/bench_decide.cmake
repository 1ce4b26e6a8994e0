# bench_decide (bench/bench_decide.c, docs/BENCHMARKS.md) built into the test
# build, so that it runs under its sanitizers: a smoke run with tiny counts
# (tests/integration/bench_decide_test.sh) of every subject, both workloads,
# 1 and 2 threads. No timing is asserted; a crash or a missing row fails.
add_executable(test_bench_decide ${PROJECT_SOURCE_DIR}/bench/bench_decide.c
                                 ${PROJECT_SOURCE_DIR}/bench/peer_handrolled.c)
target_link_libraries(test_bench_decide PRIVATE sluice_static Threads::Threads)
target_compile_definitions(test_bench_decide PRIVATE _GNU_SOURCE)
add_test(NAME bench_decide_smoke
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/bench_decide_test.sh $<TARGET_FILE:test_bench_decide>)
set_tests_properties(bench_decide_smoke PROPERTIES LABELS "unit" TIMEOUT 120)
