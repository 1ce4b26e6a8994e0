# Load shedding by priority (sluice/shed.h): the library, with a fake clock
# and a reference model; its threads test also runs under TSan.
sluice_unit_test(test_shed)
set_tests_properties(test_shed PROPERTIES LABELS "unit;concurrency")
