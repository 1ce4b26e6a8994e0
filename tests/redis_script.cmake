# The Redis store's decision script (src/store/decide.lua, redis_script.c)
# against a real redis-server the test starts itself on a unix socket
# (tests/unit/test_redis_script.c). redis-server is a build dependency
# (scripts/install-deps.sh): the test fails, never skips, without it.
sluice_unit_test(test_redis_script)
set_tests_properties(test_redis_script PROPERTIES LABELS unit TIMEOUT 180)
