# config.cmake: tests of the YAML config loader (src/policy/config.c). The
# test reads examples/*.yaml from the source tree.
sluice_unit_test(test_config)
target_compile_definitions(test_config PRIVATE SLUICE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
