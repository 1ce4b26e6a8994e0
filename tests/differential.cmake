# The memory store and the Redis store against each other: the same random
# request sequences through both must give the same answers, field by field
# (tests/unit/test_differential.c). It starts its own redis-server on a Unix
# socket (tests/unit/redis_fixture.h) and fails, never skips, without one.
# DIFF_SEED / DIFF_COUNT pick the sequences (see the file's top comment).
sluice_unit_test(test_differential)
set_tests_properties(test_differential PROPERTIES LABELS unit TIMEOUT 300)
