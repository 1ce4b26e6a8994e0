# The retry budget (sluice/retry.h): the library on a fake clock against a
# reference model; its threads test also runs under TSan.
sluice_unit_test(test_retry)
set_tests_properties(test_retry PROPERTIES LABELS "unit;concurrency")
