# Tests of the `sluice` command line (src/cli), included from tests/CMakeLists.txt.
# Unit tests of the simulator's modules and of the option parsing of every
# subcommand (test_cli_args; label "unit", so they also run under
# ASan+UBSan), a quick run of the binary itself (label "cli": also under
# ASan), and the full command-line test (label "integration").
foreach(t test_sim_trace test_sim_race test_sim_herd test_sim_aimd test_cli_args)
  sluice_unit_test(${t})
  target_link_libraries(${t} PRIVATE sluice_cli_core)
endforeach()

add_test(NAME sim_cli_quick
  COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/sim_cli.sh $<TARGET_FILE:sluice_cli> ${PROJECT_SOURCE_DIR} quick)
set_tests_properties(sim_cli_quick PROPERTIES LABELS cli TIMEOUT 120)

add_test(NAME sim_cli
  COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/sim_cli.sh $<TARGET_FILE:sluice_cli> ${PROJECT_SOURCE_DIR})
set_tests_properties(sim_cli PROPERTIES LABELS integration TIMEOUT 120)

# `sluice fetch --aimd --rate R --aimd-max M` against a scripted HTTP server:
# the seed's AIMD example (20 -> 20.5 -> 21 -> 10.5) from the command line.
add_test(NAME fetch_aimd_cli
  COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/integration/fetch_aimd_test.py $<TARGET_FILE:sluice_cli>)
set_tests_properties(fetch_aimd_cli PROPERTIES LABELS integration TIMEOUT 120)
