# house.cmake: tests of the shared primitives and of the contributor habits
# (issue 14): src/util/units.h, sluice/version.h, the man pages against
# --help, the maps of the tree in README.md and docs/ARCHITECTURE.md;
# included from tests/CMakeLists.txt.
sluice_unit_test(test_units)
sluice_unit_test(test_version)
target_compile_definitions(test_version PRIVATE SLUICE_CMAKE_VERSION="${PROJECT_VERSION}")

# The man pages (packaging/man/*.in, generated into build/man/) against
# `--help` and the config loader's top-level keys; sluiced's usage errors.
add_test(NAME man_pages
  COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/integration/man_test.py
          $<TARGET_FILE:sluiced> $<TARGET_FILE:sluice_cli> ${PROJECT_BINARY_DIR}/man)
set_tests_properties(man_pages PROPERTIES LABELS "integration;cli" TIMEOUT 120)

# The maps of the tree: README's Layout names every directory of src/,
# docs/ARCHITECTURE.md every .c file of src/, and what it names exists.
add_test(NAME docs_layout
  COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/integration/layout_test.py ${PROJECT_SOURCE_DIR})
set_tests_properties(docs_layout PROPERTIES LABELS unit TIMEOUT 60)
