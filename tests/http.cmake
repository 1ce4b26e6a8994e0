# HTTP and metrics: the request parser and response writers (tests/unit/test_http.c),
# the Prometheus text writer (test_prom.c) and the top-rejected-keys sketch (test_topk.c).
sluice_unit_test(test_http)
sluice_unit_test(test_prom)
sluice_unit_test(test_topk)
set_tests_properties(test_topk PROPERTIES LABELS "unit;concurrency")
