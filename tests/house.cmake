# house.cmake: tests of the shared primitives and of the contributor habits
# (issue 14): src/util/units.h, sluice/version.h, the man pages against
# --help; included from tests/CMakeLists.txt.
sluice_unit_test(test_units)
sluice_unit_test(test_version)
target_compile_definitions(test_version PRIVATE SLUICE_CMAKE_VERSION="${PROJECT_VERSION}")
