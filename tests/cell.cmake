# CL.THROTTLE's state (issue 12 item 2): one state per key whatever the
# parameters, one memory cap. tests/unit/test_cell.c (memory on fixed clocks,
# and the decision script's any-rate items on a redis-server of its own) and
# tests/integration/cell_test.py (the real sluiced, memory and Redis stores).
sluice_unit_test(test_cell)
set_tests_properties(test_cell PROPERTIES LABELS unit TIMEOUT 180)
if(TARGET sluiced)
  add_test(NAME cell_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/cell_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR})
  set_tests_properties(cell_integration PROPERTIES LABELS "integration;concurrency" TIMEOUT 180)
endif()
