# The floor benchmark of the Redis decision script (bench/redis/script_floor.sh):
# a smoke run with tiny counts (tests/integration/script_floor_test.sh) that
# checks every row has a figure and that decide.lua answers without an error.
# It starts its own redis-server on a free loopback port; no timing is asserted.
add_test(NAME bench_script_floor_smoke
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/script_floor_test.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(bench_script_floor_smoke PROPERTIES LABELS "integration" TIMEOUT 120)
