# Build rules of the gRPC service (protobuf-c code generation, nghttp2),
# included by the top-level CMakeLists.txt after the sluice_server target.
