# svdserve_add_proto_library(TARGET name PROTOS file.proto... IMPORT_DIR dir)
#
# A static library of the protobuf messages and gRPC stubs generated from PROTOS. IMPORT_DIR is
# protoc's import root: a file's path below it is its import path and the path of its generated
# headers ("svdserve/v1/svdserve.proto" -> "svdserve/v1/svdserve.grpc.pb.h"). PROTOS are relative
# to the calling folder. The generated code gets no warning flags: it is not ours to fix.
function(svdserve_add_proto_library)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET;IMPORT_DIR" "PROTOS")
  if(NOT arg_TARGET OR NOT arg_PROTOS OR NOT arg_IMPORT_DIR)
    message(FATAL_ERROR "svdserve_add_proto_library: TARGET, PROTOS and IMPORT_DIR are required")
  endif()
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "svdserve_add_proto_library: unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()

  add_library(${arg_TARGET} STATIC ${arg_PROTOS})
  target_link_libraries(${arg_TARGET} PUBLIC protobuf::libprotobuf gRPC::grpc++)
  target_include_directories(${arg_TARGET} PUBLIC ${CMAKE_CURRENT_BINARY_DIR})
  set_target_properties(${arg_TARGET} PROPERTIES POSITION_INDEPENDENT_CODE ON)

  protobuf_generate(TARGET ${arg_TARGET} LANGUAGE cpp
    IMPORT_DIRS ${arg_IMPORT_DIR})
  protobuf_generate(TARGET ${arg_TARGET} LANGUAGE grpc
    GENERATE_EXTENSIONS .grpc.pb.h .grpc.pb.cc
    PLUGIN "protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin>"
    IMPORT_DIRS ${arg_IMPORT_DIR})
endfunction()
