# The gRPC listener under attack (tests/integration/grpc_hardening_test.py):
# trickled prefaces, frames and streams (limits.header_timeout), answers a
# client does not read or has no flow-control window for
# (limits.max_pending_output), floods of control frames, CONTINUATION floods
# and header lists over limits.max_header_bytes. Real sluiced, raw HTTP/2
# frames written by hand. Also run under TSan (label concurrency).
sluiced_test(grpc_hardening grpc_hardening_test.py LABELS integration concurrency TIMEOUT 300)
