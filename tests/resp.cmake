# RESP: the Redis-protocol parser, writers, commands and CL.THROTTLE
# (tests/unit/test_resp.c). Also run under TSan: threads share CL.THROTTLE keys
# with different parameters.
sluice_unit_test(test_resp)
set_tests_properties(test_resp PROPERTIES LABELS "unit;concurrency")
