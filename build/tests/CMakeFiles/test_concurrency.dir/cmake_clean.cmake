file(REMOVE_RECURSE
  "CMakeFiles/test_concurrency.dir/unit/test_concurrency.c.o"
  "CMakeFiles/test_concurrency.dir/unit/test_concurrency.c.o.d"
  "test_concurrency"
  "test_concurrency.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_concurrency.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
