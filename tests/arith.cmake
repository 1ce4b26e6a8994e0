# The hot path's arithmetic (GCRA pairs, window indexes, 64-bit products) at
# its edges against 128-bit references (tests/unit/test_arith.c).
sluice_unit_test(test_arith)
