# del.cmake: DEL for CL.THROTTLE's state over RESP and sl_table_forget
# (tests/unit/test_resp_del.c, memory store, fixed clock); the Redis store's
# DEL is in cell_integration (tests/integration/cell_test.py).
sluice_unit_test(test_resp_del)
set_tests_properties(test_resp_del PROPERTIES LABELS "unit;concurrency")
