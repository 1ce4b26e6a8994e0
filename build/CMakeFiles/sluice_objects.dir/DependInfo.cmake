
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/src/core/algorithm.c" "CMakeFiles/sluice_objects.dir/src/core/algorithm.c.o" "gcc" "CMakeFiles/sluice_objects.dir/src/core/algorithm.c.o.d"
  "/work/main/src/core/clock.c" "CMakeFiles/sluice_objects.dir/src/core/clock.c.o" "gcc" "CMakeFiles/sluice_objects.dir/src/core/clock.c.o.d"
  "/work/main/src/core/error.c" "CMakeFiles/sluice_objects.dir/src/core/error.c.o" "gcc" "CMakeFiles/sluice_objects.dir/src/core/error.c.o.d"
  "/work/main/src/core/fixed_window.c" "CMakeFiles/sluice_objects.dir/src/core/fixed_window.c.o" "gcc" "CMakeFiles/sluice_objects.dir/src/core/fixed_window.c.o.d"
  "/work/main/src/core/gcra.c" "CMakeFiles/sluice_objects.dir/src/core/gcra.c.o" "gcc" "CMakeFiles/sluice_objects.dir/src/core/gcra.c.o.d"
  "/work/main/src/core/hash.c" "CMakeFiles/sluice_objects.dir/src/core/hash.c.o" "gcc" "CMakeFiles/sluice_objects.dir/src/core/hash.c.o.d"
  "/work/main/src/core/leaky_queue.c" "CMakeFiles/sluice_objects.dir/src/core/leaky_queue.c.o" "gcc" "CMakeFiles/sluice_objects.dir/src/core/leaky_queue.c.o.d"
  "/work/main/src/core/limiter.c" "CMakeFiles/sluice_objects.dir/src/core/limiter.c.o" "gcc" "CMakeFiles/sluice_objects.dir/src/core/limiter.c.o.d"
  "/work/main/src/core/params.c" "CMakeFiles/sluice_objects.dir/src/core/params.c.o" "gcc" "CMakeFiles/sluice_objects.dir/src/core/params.c.o.d"
  "/work/main/src/core/rate.c" "CMakeFiles/sluice_objects.dir/src/core/rate.c.o" "gcc" "CMakeFiles/sluice_objects.dir/src/core/rate.c.o.d"
  "/work/main/src/core/sliding_log.c" "CMakeFiles/sluice_objects.dir/src/core/sliding_log.c.o" "gcc" "CMakeFiles/sluice_objects.dir/src/core/sliding_log.c.o.d"
  "/work/main/src/core/sliding_window.c" "CMakeFiles/sluice_objects.dir/src/core/sliding_window.c.o" "gcc" "CMakeFiles/sluice_objects.dir/src/core/sliding_window.c.o.d"
  "/work/main/src/core/table.c" "CMakeFiles/sluice_objects.dir/src/core/table.c.o" "gcc" "CMakeFiles/sluice_objects.dir/src/core/table.c.o.d"
  "/work/main/src/core/token_bucket.c" "CMakeFiles/sluice_objects.dir/src/core/token_bucket.c.o" "gcc" "CMakeFiles/sluice_objects.dir/src/core/token_bucket.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
