# Weighted fair queuing across tenants (sluice/fairq.h): worked examples, a
# reference model, the fairness bound on random traces; its threads test also
# runs under TSan.
sluice_unit_test(test_fairq)
set_tests_properties(test_fairq PROPERTIES LABELS "unit;concurrency")

# `sluice sim fair` (src/cli/sim_fair.c): FIFO against the fair queue, a
# dump against small tenants; numbers for a seed and the bounds per job.
sluice_unit_test(test_sim_fair)
target_link_libraries(test_sim_fair PRIVATE sluice_cli_core)

