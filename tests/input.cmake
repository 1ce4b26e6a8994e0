# input.cmake: the strictness of sluiced's inputs (issue 12, items 6, 7, 16):
# NUL bytes in keys on every path, /metrics beyond 1024 policies, /v1/top's
# UTF-8, POST /v1/check's trailing bytes and costs, /v1/auth's refusals, one
# RateLimit-Policy text (tests/integration/input_test.py, the real sluiced with
# curl, nghttp and raw sockets). A second run on the Redis store. The JSON body
# scan and the JSON string writer on their own: tests/unit/test_http_body.c.
sluice_unit_test(test_http_body)
# gRPC descriptors with NUL bytes, on sl__grpc_call: tests/unit/test_grpc_nul.c.
sluice_unit_test(test_grpc_nul)
sluiced_test(input_integration input_test.py REDIS LABELS integration TIMEOUT 180)
