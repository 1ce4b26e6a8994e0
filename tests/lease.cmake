# lease.cmake: concurrency limits (issue 16 item 1): the library's limiter
# (include/sluice/concurrency.h) on a fake clock and under threads
# (test_lease, also under TSan).
sluice_unit_test(test_lease)
set_tests_properties(test_lease PROPERTIES LABELS "unit;concurrency")
