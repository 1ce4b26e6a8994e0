# Ramp-up after recovery (sluice/ramp.h, docs/protection.md): the factor,
# ramped tables and their properties on a fake clock.
sluice_unit_test(test_ramp)

# ramp_up: in the config (its errors), through the engine on the memory store
# with a fake clock, across reloads, and examples/ramp-up.
if(TARGET sluice_server)
  sluice_unit_test(test_ramp_config)
  target_compile_definitions(test_ramp_config PRIVATE SLUICE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
endif()
