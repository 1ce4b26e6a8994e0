# signals.cmake (issue 17, first half): POST /v1/graphql through the real sluiced
# (tests/integration/graphql_http_test.py: examples/graphql.yaml as shipped, points
# budgets, refusals that charge nothing, /metrics), on the memory and the Redis
# store; and the near-limit signals, labels and promtool (signals_test.py).
sluiced_test(graphql_http_integration graphql_http_test.py REDIS_IF_FOUND
             LABELS integration TIMEOUT 120)

# The engine's near-limit signals (policy/decide.h): the remaining-ratio
# histogram's integer bounds and sum, the near-limit sketch (labels, groups,
# shadow limits). Fake clock, memory store.
sluice_unit_test(test_signals)

# Near-limit signals, labels and promtool through the real sluiced
# (tests/integration/signals_test.py): sluice_decision_remaining_ratio's exact
# buckets, /v1/top?by=near, sluice_rule_decisions_total by rule, policy and tier,
# sluice_identity_refused_total, and `promtool check metrics` on the live /metrics
# (skipped without promtool: Debian's prometheus, in scripts/install-deps.sh).
sluiced_test(signals_integration signals_test.py REDIS_IF_FOUND LABELS integration TIMEOUT 120)
