# quota.cmake: Envoy's quota_mode on the decision engine's "any" groups
# (tests/unit/test_quota_mode.c, fake clock).
sluice_unit_test(test_quota_mode)
target_compile_definitions(test_quota_mode PRIVATE SLUICE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
