# yaml_reader.cmake: tests of the config loader's reading layer
# (src/policy/yaml_reader.c) and of the bounded whole-file read
# (src/util/file_read.c), included from tests/CMakeLists.txt.
sluice_unit_test(test_yaml_reader)
sluice_unit_test(test_file_read)
