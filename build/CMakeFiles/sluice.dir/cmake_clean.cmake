file(REMOVE_RECURSE
  "libsluice.pdb"
  "libsluice.so"
  "libsluice.so.0"
  "libsluice.so.0.1.0"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/sluice.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
