file(REMOVE_RECURSE
  "CMakeFiles/test_worked_examples.dir/unit/test_worked_examples.c.o"
  "CMakeFiles/test_worked_examples.dir/unit/test_worked_examples.c.o.d"
  "test_worked_examples"
  "test_worked_examples.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_worked_examples.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
