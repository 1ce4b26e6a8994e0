# The README and examples/ as a user runs them (tests/integration/examples_test.py):
# the README's "Many servers, one limit" session on a real redis-server, and
# examples/nginx/sluice.conf's 401 under a real nginx (one WWW-Authenticate).
find_program(SLUICE_NGINX nginx PATHS /usr/sbin /sbin)
sluiced_test(examples_integration examples_test.py
             LABELS integration TIMEOUT 120
             ARGS ${SLUICE_NGINX})

# The longest periods docs/configuration.md and docs/semantics.md promise
# (buckets: 26687d at burst 1; windows: 36600d), and sluiced's message.
sluice_unit_test(test_bucket_period)

# A token bucket that refills in steps (refill: steps, Envoy's local rate
# limit), against a reference model.
sluice_unit_test(test_step_refill)
