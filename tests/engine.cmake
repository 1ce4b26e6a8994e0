# engine.cmake: the one decision engine (src/policy/decide.c) and the store
# interface (src/store/store.h) on a fake clock: the memory store's group
# contract through the engine (all or nothing, the shadow group after the
# enforced one, costs that never pass, counters, the sketch), and a store
# that completes later (done exactly once, fail-mode counters), with the
# batched store's debts. tests/unit/test_decide.c.
sluice_unit_test(test_decide)
