# CMake generated Testfile for 
# Source directory: /work/main/tests
# Build directory: /work/main/build/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
add_test([=[test_worked_examples]=] "/work/main/build/tests/test_worked_examples")
set_tests_properties([=[test_worked_examples]=] PROPERTIES  LABELS "unit" TIMEOUT "300" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;10;add_test;/work/main/tests/CMakeLists.txt;14;sluice_unit_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[test_properties]=] "/work/main/build/tests/test_properties")
set_tests_properties([=[test_properties]=] PROPERTIES  LABELS "unit" TIMEOUT "300" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;10;add_test;/work/main/tests/CMakeLists.txt;15;sluice_unit_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[test_params]=] "/work/main/build/tests/test_params")
set_tests_properties([=[test_params]=] PROPERTIES  LABELS "unit" TIMEOUT "300" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;10;add_test;/work/main/tests/CMakeLists.txt;16;sluice_unit_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[test_table]=] "/work/main/build/tests/test_table")
set_tests_properties([=[test_table]=] PROPERTIES  LABELS "unit" TIMEOUT "300" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;10;add_test;/work/main/tests/CMakeLists.txt;17;sluice_unit_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[test_limiter]=] "/work/main/build/tests/test_limiter")
set_tests_properties([=[test_limiter]=] PROPERTIES  LABELS "unit" TIMEOUT "300" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;10;add_test;/work/main/tests/CMakeLists.txt;18;sluice_unit_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[test_concurrency]=] "/work/main/build/tests/test_concurrency")
set_tests_properties([=[test_concurrency]=] PROPERTIES  LABELS "unit;concurrency" TIMEOUT "300" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;10;add_test;/work/main/tests/CMakeLists.txt;19;sluice_unit_test;/work/main/tests/CMakeLists.txt;0;")
add_test([=[pkgconfig_example]=] "/work/main/tests/integration/pkgconfig_example.sh" "/work/main/build" "/work/main")
set_tests_properties([=[pkgconfig_example]=] PROPERTIES  LABELS "integration" TIMEOUT "120" _BACKTRACE_TRIPLES "/work/main/tests/CMakeLists.txt;23;add_test;/work/main/tests/CMakeLists.txt;0;")
