# Weighted fair queuing across tenants (sluice/fairq.h): worked examples, a
# reference model, the fairness bound on random traces; its threads test also
# runs under TSan.
sluice_unit_test(test_fairq)
set_tests_properties(test_fairq PROPERTIES LABELS "unit;concurrency")
