file(REMOVE_RECURSE
  "CMakeFiles/test_table.dir/unit/test_table.c.o"
  "CMakeFiles/test_table.dir/unit/test_table.c.o.d"
  "test_table"
  "test_table.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_table.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
