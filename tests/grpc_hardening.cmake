# The gRPC listener under attack (tests/integration/grpc_hardening_test.py):
# trickled prefaces, frames and streams (limits.header_timeout), answers a
# client does not read or has no flow-control window for
# (limits.max_pending_output), floods of control frames, CONTINUATION floods
# and header lists over limits.max_header_bytes. Real sluiced, raw HTTP/2
# frames written by hand. Also run under TSan (label concurrency).
if(TARGET sluiced)
  add_test(NAME grpc_hardening
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/integration/grpc_hardening_test.py
            $<TARGET_FILE:sluiced> ${PROJECT_SOURCE_DIR})
  set_tests_properties(grpc_hardening PROPERTIES LABELS "integration;concurrency" TIMEOUT 300)
endif()
