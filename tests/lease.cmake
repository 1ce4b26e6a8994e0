# lease.cmake: concurrency limits (issue 16 item 1): the library's limiter
# (include/sluice/concurrency.h) on a fake clock and under threads
# (test_lease, also under TSan).
sluice_unit_test(test_lease)
set_tests_properties(test_lease PROPERTIES LABELS "unit;concurrency")
# test_lease_config: algorithm: concurrency in the config (config_leases.c),
# examples/protection, and the lease set across a reload (policy/lease_set.h).
sluice_unit_test(test_lease_config)
target_compile_definitions(test_lease_config PRIVATE SLUICE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
