# sluiced: integration tests against the real server with real clients
# (curl, redis-cli, raw sockets). See tests/integration/sluiced_test.py. Also
# run under TSan (label concurrency): workers, reload and CL.THROTTLE share state.
# REDIS: the same tests with the Redis store (answers written when Redis has decided).
sluiced_test(sluiced_integration sluiced_test.py REDIS LABELS integration concurrency TIMEOUT 300)
