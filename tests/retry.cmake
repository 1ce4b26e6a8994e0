# The retry budget (sluice/retry.h): the library on a fake clock against a
# reference model; its threads test also runs under TSan.
sluice_unit_test(test_retry)
set_tests_properties(test_retry PROPERTIES LABELS "unit;concurrency")

# Retry budgets in sluiced (retry_budget:): /v1/check, the counters, reloads,
# the config's errors; a real redis-server shared by two sluiced, and killed
# for each fail mode.
sluiced_test(retry_integration retry_test.py LABELS integration TIMEOUT 180)

# test_retry_redis: the Redis store's retry script (src/store/retry.lua) against
# the library on random traces, on a private redis-server.
sluice_unit_test(test_retry_redis)
set_tests_properties(test_retry_redis PROPERTIES LABELS unit TIMEOUT 180)

# Load shedding and the retry budget on /v1/auth through a real nginx:
# examples/nginx/protected.yaml with sluice.conf (403 + Sluice-Shed /
# Sluice-Retry-Budget turned into 503 / 429), a rule's priority:.
find_program(SLUICE_NGINX nginx PATHS /usr/sbin /sbin)
sluiced_test(protection_nginx_integration protection_nginx_test.py
             LABELS integration TIMEOUT 120
             ARGS ${SLUICE_NGINX})
