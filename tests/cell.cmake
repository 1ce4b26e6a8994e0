# CL.THROTTLE's state (issue 12 item 2): one state per key whatever the
# parameters, one memory cap. tests/unit/test_cell.c (memory on fixed clocks,
# and the decision script's any-rate items on a redis-server of its own) and
# tests/integration/cell_test.py (the real sluiced, memory and Redis stores).
sluice_unit_test(test_cell)
set_tests_properties(test_cell PROPERTIES LABELS unit TIMEOUT 180)
sluiced_test(cell_integration cell_test.py LABELS integration concurrency TIMEOUT 180)
