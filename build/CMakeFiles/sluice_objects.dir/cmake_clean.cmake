file(REMOVE_RECURSE
  "CMakeFiles/sluice_objects.dir/src/core/algorithm.c.o"
  "CMakeFiles/sluice_objects.dir/src/core/algorithm.c.o.d"
  "CMakeFiles/sluice_objects.dir/src/core/clock.c.o"
  "CMakeFiles/sluice_objects.dir/src/core/clock.c.o.d"
  "CMakeFiles/sluice_objects.dir/src/core/error.c.o"
  "CMakeFiles/sluice_objects.dir/src/core/error.c.o.d"
  "CMakeFiles/sluice_objects.dir/src/core/fixed_window.c.o"
  "CMakeFiles/sluice_objects.dir/src/core/fixed_window.c.o.d"
  "CMakeFiles/sluice_objects.dir/src/core/gcra.c.o"
  "CMakeFiles/sluice_objects.dir/src/core/gcra.c.o.d"
  "CMakeFiles/sluice_objects.dir/src/core/hash.c.o"
  "CMakeFiles/sluice_objects.dir/src/core/hash.c.o.d"
  "CMakeFiles/sluice_objects.dir/src/core/leaky_queue.c.o"
  "CMakeFiles/sluice_objects.dir/src/core/leaky_queue.c.o.d"
  "CMakeFiles/sluice_objects.dir/src/core/limiter.c.o"
  "CMakeFiles/sluice_objects.dir/src/core/limiter.c.o.d"
  "CMakeFiles/sluice_objects.dir/src/core/params.c.o"
  "CMakeFiles/sluice_objects.dir/src/core/params.c.o.d"
  "CMakeFiles/sluice_objects.dir/src/core/rate.c.o"
  "CMakeFiles/sluice_objects.dir/src/core/rate.c.o.d"
  "CMakeFiles/sluice_objects.dir/src/core/sliding_log.c.o"
  "CMakeFiles/sluice_objects.dir/src/core/sliding_log.c.o.d"
  "CMakeFiles/sluice_objects.dir/src/core/sliding_window.c.o"
  "CMakeFiles/sluice_objects.dir/src/core/sliding_window.c.o.d"
  "CMakeFiles/sluice_objects.dir/src/core/table.c.o"
  "CMakeFiles/sluice_objects.dir/src/core/table.c.o.d"
  "CMakeFiles/sluice_objects.dir/src/core/token_bucket.c.o"
  "CMakeFiles/sluice_objects.dir/src/core/token_bucket.c.o.d"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/sluice_objects.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
