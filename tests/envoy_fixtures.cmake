# envoy_fixtures.cmake: envoyproxy/ratelimit's own rule files (issue 15),
# copied into tests/peers/envoyproxy-ratelimit/ (peer/ verbatim, peer/SOURCE
# names the commit; translated/ the configs of its Go tests; derived/ peer
# files with what sluiced once refused taken out, which the peer accepts too):
# - test_envoy_fixtures (unit, so also under ASan+UBSan): every file the peer
#   accepts loads (alone, and in the directories it loads as one), every file
#   it refuses is refused, and every file there has one of the two verdicts
#   in the test (a new one without fails); wildcards anywhere in a
#   value and share_threshold with them, matched as the peer matches;
#   quota_mode and descriptor metadata kept;
# - envoy_fixtures_integration: the same files through the real sluiced
#   (--check-config; every file there, each accepted one alone too), and the peer's health checks: GET /healthcheck and the
#   gRPC health service "ratelimit".
sluice_unit_test(test_envoy_fixtures)
target_compile_definitions(test_envoy_fixtures PRIVATE SLUICE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

sluiced_test(envoy_fixtures_integration envoy_fixtures_test.py LABELS integration TIMEOUT 180)
