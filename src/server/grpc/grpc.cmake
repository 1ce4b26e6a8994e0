# Build rules of the gRPC service (protobuf-c code generation, nghttp2),
# included by the top-level CMakeLists.txt after the sluice_server target.
#
# The project's own minimal .proto files (src/server/grpc/proto/, same
# packages, names and field numbers as upstream) are compiled by protoc-c
# into the build directory; the generated C is added to sluice_server.
pkg_check_modules(NGHTTP2 REQUIRED IMPORTED_TARGET libnghttp2)
pkg_check_modules(PROTOBUF_C REQUIRED IMPORTED_TARGET libprotobuf-c)
find_program(PROTOC_C protoc-c REQUIRED)

set(SLUICE_PROTO_DIR ${CMAKE_CURRENT_SOURCE_DIR}/src/server/grpc/proto)
set(SLUICE_PROTO_OUT ${CMAKE_CURRENT_BINARY_DIR}/proto)
set(SLUICE_PROTOS
  envoy/service/ratelimit/v3/rls.proto
  envoy/extensions/common/ratelimit/v3/ratelimit.proto
  envoy/type/v3/ratelimit_unit.proto
  envoy/config/core/v3/base.proto
  google/protobuf/duration.proto
  google/protobuf/timestamp.proto
  google/protobuf/wrappers.proto
  google/protobuf/struct.proto
  grpc/health/v1/health.proto)

set(SLUICE_PROTO_SOURCES)
set(SLUICE_PROTO_INPUTS)
foreach(p ${SLUICE_PROTOS})
  string(REGEX REPLACE "\\.proto$" "" stem ${p})
  list(APPEND SLUICE_PROTO_SOURCES ${SLUICE_PROTO_OUT}/${stem}.pb-c.c)
  list(APPEND SLUICE_PROTO_HEADERS ${SLUICE_PROTO_OUT}/${stem}.pb-c.h)
  list(APPEND SLUICE_PROTO_INPUTS ${SLUICE_PROTO_DIR}/${p})
endforeach()

# One protoc-c run for all files: they import each other.
add_custom_command(
  OUTPUT ${SLUICE_PROTO_SOURCES} ${SLUICE_PROTO_HEADERS}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${SLUICE_PROTO_OUT}
  COMMAND ${PROTOC_C} --c_out=${SLUICE_PROTO_OUT} -I${SLUICE_PROTO_DIR} ${SLUICE_PROTOS}
  WORKING_DIRECTORY ${SLUICE_PROTO_DIR}
  DEPENDS ${SLUICE_PROTO_INPUTS}
  COMMENT "protoc-c: generating the gRPC messages"
  VERBATIM)

# Generated code is not ours to warn about.
set_source_files_properties(${SLUICE_PROTO_SOURCES} PROPERTIES COMPILE_OPTIONS "-w")
target_sources(sluice_server PRIVATE ${SLUICE_PROTO_SOURCES})
target_include_directories(sluice_server PUBLIC ${SLUICE_PROTO_OUT})
target_link_libraries(sluice_server PUBLIC PkgConfig::NGHTTP2 PkgConfig::PROTOBUF_C)
