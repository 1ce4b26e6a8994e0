file(REMOVE_RECURSE
  "CMakeFiles/test_limiter.dir/unit/test_limiter.c.o"
  "CMakeFiles/test_limiter.dir/unit/test_limiter.c.o.d"
  "test_limiter"
  "test_limiter.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_limiter.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
