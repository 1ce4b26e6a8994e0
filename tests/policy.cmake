# policy.cmake: the policy layer against the real sluiced (issue 12): the per-IP
# fence in front of the API key check (a flood of random keys is fenced, refused
# keys are counted) and shadow mode over Envoy's rules (top-level shadow, rule
# metrics, /v1/top?domain=, rate-limited shadow log). tests/integration/policy_test.py,
# raw pipelined sockets; also with the Redis store, and under TSan (label
# concurrency): workers share the fence's table, the rules' sketch and the log budget.
sluiced_test(policy_integration policy_test.py REDIS_IF_FOUND
             LABELS integration concurrency TIMEOUT 120)

# The budget of the rate-limited log that shadow mode writes to (src/util/log.c).
sluice_unit_test(test_log)
