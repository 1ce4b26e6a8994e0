# The memory store and the Redis store (as the script and as the module,
# sluice-redis.so) against each other: the same random
# request sequences through both must give the same answers, field by field
# (tests/unit/test_differential.c). It starts its own redis-server on a Unix
# socket (tests/unit/redis_fixture.h) with frozen_clock preloaded (Redis's
# wall clock stands still: no key expires in real time), and fails, never
# skips, without one. DIFF_SEED / DIFF_COUNT pick the sequences (see the
# file's top comment).
add_library(frozen_clock MODULE unit/frozen_clock.c)
# redis-server is not instrumented: no sanitizer (nor fuzzer) flags here
set_property(TARGET frozen_clock PROPERTY COMPILE_OPTIONS "")
set_property(TARGET frozen_clock PROPERTY LINK_OPTIONS "")
target_link_libraries(frozen_clock PRIVATE ${CMAKE_DL_LIBS})
sluice_frozen_redis_test(test_differential)
