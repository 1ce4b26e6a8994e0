file(REMOVE_RECURSE
  "CMakeFiles/sluice-demo.dir/examples/demo.c.o"
  "CMakeFiles/sluice-demo.dir/examples/demo.c.o.d"
  "sluice-demo"
  "sluice-demo.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/sluice-demo.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
