# The README and examples/ as a user runs them (tests/integration/examples_test.py):
# the README's "Many servers, one limit" session on a real redis-server, and
# examples/nginx/sluice.conf's 401 under a real nginx (one WWW-Authenticate).
if(TARGET sluiced)
  find_program(SLUICE_NGINX nginx PATHS /usr/sbin /sbin)
  add_test(NAME examples_integration
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/examples_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR} ${SLUICE_NGINX})
  set_tests_properties(examples_integration PROPERTIES LABELS integration TIMEOUT 120)
endif()

# The longest periods docs/configuration.md and docs/semantics.md promise
# (buckets: 26687d at burst 1; windows: 36600d), and sluiced's message.
sluice_unit_test(test_bucket_period)

# A token bucket that refills in steps (refill: steps, Envoy's local rate
# limit), against a reference model.
sluice_unit_test(test_step_refill)
