file(REMOVE_RECURSE
  "CMakeFiles/test_properties.dir/unit/test_properties.c.o"
  "CMakeFiles/test_properties.dir/unit/test_properties.c.o.d"
  "test_properties"
  "test_properties.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_properties.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
