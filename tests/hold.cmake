# Answers held until their release time, fairly across tenants
# (src/server/hold.c: GET /v1/auth with a leaky_queue's hold:): the order,
# groups, bounds and cancellation on a fake clock (test_hold); through a
# real nginx, auth_request to sluiced: the upstream sees the queue's
# spacing, a small tenant is not stuck behind a big one's burst, the bounds
# refuse at once, a closed connection frees its place (hold_integration).
sluice_unit_test(test_hold)

# REDIS: the same with the Redis store (the decision completes after the handler returns)
find_program(SLUICE_NGINX nginx PATHS /usr/sbin /sbin)
sluiced_test(hold_integration hold_test.py REDIS LABELS integration TIMEOUT 120 ARGS ${SLUICE_NGINX})
