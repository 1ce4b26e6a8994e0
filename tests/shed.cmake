# Load shedding by priority (sluice/shed.h): the library, with a fake clock
# and a reference model; its threads test also runs under TSan.
sluice_unit_test(test_shed)
set_tests_properties(test_shed PROPERTIES LABELS "unit;concurrency")

# Load shedding in sluiced (shedding:): /v1/check by priority, 503 with
# Retry-After, refunds, metrics, reloads, config errors.
sluiced_test(shed_integration shed_test.py LABELS integration TIMEOUT 120)

# The fleet's capacity in Redis (shedding: {scope: fleet}): decide.lua's
# token bucket with a floor against sl_shed on a real redis-server that the
# test starts on a unix socket (redis_fixture.h).
sluice_unit_test(test_shed_redis)
set_tests_properties(test_shed_redis PROPERTIES LABELS unit TIMEOUT 120)

# The fleet's capacity (shedding: {scope: fleet}): two sluiced on one real
# redis-server shed at 1x the capacity, refusals by a policy take nothing,
# Redis killed under each on_failure, examples/protection/fleet-shedding.yaml;
# under TSan too (two workers of each sluiced share the process's shedder).
sluiced_test(shed_fleet_integration shed_fleet_test.py LABELS integration concurrency TIMEOUT 180)

# Shedding through the engine: the memory store with the process's shedder
# against the Redis store with the fleet's capacity (script and module:
# require), the same random requests on a fake clock (redis-server with
# frozen_clock, tests/differential.cmake).
sluice_frozen_redis_test(test_shed_engine)
