file(REMOVE_RECURSE
  "CMakeFiles/test_params.dir/unit/test_params.c.o"
  "CMakeFiles/test_params.dir/unit/test_params.c.o.d"
  "test_params"
  "test_params.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_params.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
