# names.cmake: the naming convention (DESIGN.md section 6, issue 14 item 4) as two
# cheap tests; included from tests/CMakeLists.txt.
#
# internal_names: no identifier of src/'s C (code and comments, not string or character
# literals) is sl_* / SL_* unless include/sluice/*.h declares it. Patterns of public
# names in comments ("SL_E*", "SL_PRIORITY_") pass. The fix for a failure is an entry in
# scripts/rename-internal.list and a run of scripts/rename-internal.sh.
add_test(NAME internal_names
  COMMAND ${PROJECT_SOURCE_DIR}/scripts/rename-internal.sh --check)
set_tests_properties(internal_names PROPERTIES LABELS unit TIMEOUT 60)

# internal_symbols: every global symbol the static libraries define is public (declared
# by include/sluice/) or sl__ (protobuf-c's generated code excepted): what catches an
# unprefixed non-static function (src/cli had 60 before issue 14).
set(sluice_name_libs $<TARGET_FILE:sluice_static>)
foreach(lib sluice_client_static sluice_server sluice_cli_core)
  if(TARGET ${lib})
    list(APPEND sluice_name_libs $<TARGET_FILE:${lib}>)
  endif()
endforeach()
add_test(NAME internal_symbols
  COMMAND ${PROJECT_SOURCE_DIR}/scripts/rename-internal.sh --check-symbols ${sluice_name_libs})
set_tests_properties(internal_symbols PROPERTIES LABELS unit TIMEOUT 60)

# server_layering: the layers of docs/ARCHITECTURE.md (issue 14): no file under
# src/server/ includes a store header or asks the decider for its store; what a
# protocol needs of the store (a decision, a retry budget, a lease) goes through the
# policy layer (policy/decide.h, policy/retry_stage.h, policy/lease_set.h).
add_test(NAME server_layering
  COMMAND sh -c "! grep -rnE '#[[:space:]]*include[[:space:]]*[<\"]store/|sl__decider_store' src/server"
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(server_layering PROPERTIES LABELS unit TIMEOUT 60)
