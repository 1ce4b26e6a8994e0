# Ramp-up after recovery (sluice/ramp.h, docs/protection.md): the factor,
# ramped tables and their properties on a fake clock.
sluice_unit_test(test_ramp)
