file(REMOVE_RECURSE
  "libsluice.a"
  "libsluice.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/sluice_static.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
