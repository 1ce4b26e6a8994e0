# Ramp-up after recovery (sluice/ramp.h, docs/protection.md): the factor,
# ramped tables and their properties on a fake clock.
sluice_unit_test(test_ramp)

# ramp_up: in the config (its errors), through the engine on the memory store
# with a fake clock, across reloads, and examples/ramp-up.
if(TARGET sluice_server)
  sluice_unit_test(test_ramp_config)
  target_compile_definitions(test_ramp_config PRIVATE SLUICE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
endif()

# ramp_integration: ramp_up through the real sluiced: from the start, metrics,
# POST /v1/ramp and its access, a real redis-server killed and restarted (the
# ramp starts at the recovery), and the local fallback's share at a low factor.
sluiced_test(ramp_integration ramp_test.py LABELS integration TIMEOUT 300)
