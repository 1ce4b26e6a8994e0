# quota.cmake: Envoy's quota_mode on the decision engine's "any" groups
# (tests/unit/test_quota_mode.c, fake clock).
sluice_unit_test(test_quota_mode)
target_compile_definitions(test_quota_mode PRIVATE SLUICE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
# quota_integration (tests/integration/quota_test.py): the same through the
# real sluiced's POST /json, memory and Redis stores, the peer's own example
# config loaded unchanged.
sluiced_test(quota_integration quota_test.py LABELS integration TIMEOUT 120)
