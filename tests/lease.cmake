# lease.cmake: concurrency limits (issue 16 item 1): the library's limiter
# (include/sluice/concurrency.h) on a fake clock and under threads
# (test_lease, also under TSan).
sluice_unit_test(test_lease)
set_tests_properties(test_lease PROPERTIES LABELS "unit;concurrency")
# test_lease_config: algorithm: concurrency in the config (config_leases.c),
# examples/protection, and the lease set across a reload (policy/lease_set.h).
sluice_unit_test(test_lease_config)
target_compile_definitions(test_lease_config PRIVATE SLUICE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

# lease_integration[_redis]: /v1/acquire, /v1/release, /v1/renew and SL.ACQUIRE,
# SL.RELEASE, SL.RENEW through the real sluiced (memory and Redis stores),
# expiry, reload, examples/protection, and Redis killed (fail modes).
sluiced_test(lease_integration lease_test.py REDIS LABELS integration concurrency TIMEOUT 300)

# lease_fleet_integration: one concurrency limit exact across two sluiced on one
# redis-server under 200 concurrent clients, with clients killed mid-lease.
sluiced_test(lease_fleet_integration lease_fleet_test.py LABELS integration TIMEOUT 300)

# test_adaptive: the adaptive concurrency limit (include/sluice/adaptive.h,
# issue 16 item 2, library only) on a fake clock.
sluice_unit_test(test_adaptive)

# test_lease_redis: the Redis store's lease script (src/store/lease.lua) against
# a real redis-server of its own (tests/unit/redis_fixture.h), on a fake clock.
sluice_unit_test(test_lease_redis)
set_tests_properties(test_lease_redis PROPERTIES LABELS unit TIMEOUT 180)

# lease_cluster_integration: concurrency limits on a real Redis Cluster (3
# masters, tests/integration/redis_cluster.py): lease sets spread over the
# masters by slot, exact per key, renew and release through the routing.
sluiced_test(lease_cluster_integration lease_cluster_test.py LABELS integration TIMEOUT 300)

# sim_adaptive_cli: `sluice sim adaptive` (a slowing backend: a fixed rate limit
# against the adaptive concurrency limit), deterministic, its story checked.
if(TARGET sluice_cli)
  add_test(NAME sim_adaptive_cli
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/sim_adaptive_test.sh $<TARGET_FILE:sluice_cli>)
  set_tests_properties(sim_adaptive_cli PROPERTIES LABELS "integration;cli" TIMEOUT 120)
endif()
