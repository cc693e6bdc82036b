#!/usr/bin/env bash
# The server's layering, checked on the includes of the source tree (CTest: server_layering):
#   server/runtime  includes no protobuf or gRPC header (no *.pb.h, grpc/, grpcpp/,
#                   google/protobuf/) and nothing from server/repository, server/auth,
#                   server/grpc or server/process;
#   server/repository includes no protobuf or gRPC header and nothing from server/auth,
#                   server/grpc or server/process;
#   server/auth     includes no protobuf or gRPC header and nothing from server/grpc or
#                   server/process;
#   server/grpc     includes nothing from server/process;
#   kernels         includes nothing from server/ or client/, and no gRPC or protobuf header.
# Usage: check_layering.sh ROOT         check the tree at ROOT; exit 1 naming each offending line
#        check_layering.sh --self-test  plant each forbidden include in a scratch tree and make
#                                       sure it is caught (and that a clean tree passes)
set -euo pipefail

protobuf_or_grpc='[<"]((grpc|grpcpp|google/protobuf)/|[^>"]*\.pb\.h[>"])'

# check_folder ROOT FOLDER RULE PATTERN: every include of a source file under ROOT/FOLDER that
# matches PATTERN breaks RULE.
check_folder() {
  local root=$1 folder=$2 rule=$3 pattern=$4 found
  [ -d "$root/$folder" ] || return 0
  found=$(grep -rnE --include='*.hpp' --include='*.cpp' --include='*.h' --include='*.cu' \
            --include='*.cuh' "^[[:space:]]*#[[:space:]]*include[[:space:]]*$pattern" \
            "$root/$folder" || true)
  [ -z "$found" ] && return 0
  echo "$rule:"
  echo "$found" | sed "s|^$root/|  |"
  return 1
}

check() {
  local root=$1 status=0
  check_folder "$root" server/runtime "server/runtime must not include protobuf or gRPC" \
    "$protobuf_or_grpc" || status=1
  check_folder "$root" server/runtime \
    "server/runtime must not include server/repository, server/auth, server/grpc or server/process" \
    '"server/(repository|auth|grpc|process)/' || status=1
  check_folder "$root" server/repository "server/repository must not include protobuf or gRPC" \
    "$protobuf_or_grpc" || status=1
  check_folder "$root" server/repository \
    "server/repository must not include server/auth, server/grpc or server/process" \
    '"server/(auth|grpc|process)/' || status=1
  check_folder "$root" server/auth "server/auth must not include protobuf or gRPC" \
    "$protobuf_or_grpc" || status=1
  check_folder "$root" server/auth "server/auth must not include server/grpc or server/process" \
    '"server/(grpc|process)/' || status=1
  check_folder "$root" server/grpc "server/grpc must not include server/process" \
    '"server/process/' || status=1
  check_folder "$root" kernels "kernels must not include server/ or client/" \
    '"(server|client)/' || status=1
  check_folder "$root" kernels "kernels must not include protobuf or gRPC" \
    "$protobuf_or_grpc" || status=1
  return $status
}

# plant_clean TREE: one file of each layer with only allowed includes.
plant_clean() {
  local tree=$1
  rm -rf "$tree"
  mkdir -p "$tree/server/runtime" "$tree/server/repository" "$tree/server/auth" "$tree/server/grpc" \
    "$tree/kernels/gpu"
  printf '#include "kernels/backend.hpp"\n#include <spdlog/spdlog.h>\n#include "server/runtime/job.hpp"\n' \
    > "$tree/server/runtime/job.cpp"
  printf '#include "server/runtime/logger.hpp"\n#include <hiredis/hiredis.h>\n' \
    > "$tree/server/repository/redis_repository.cpp"
  printf '#include "server/runtime/logger.hpp"\n#include <openssl/evp.h>\n' \
    > "$tree/server/auth/token_table.cpp"
  printf '#include "server/runtime/factor_store.hpp"\n#include <zlib.h>\n' \
    > "$tree/server/repository/factor_cache.cpp"
  printf '#include "server/runtime/job.hpp"\n#include <grpcpp/grpcpp.h>\n#include "svdserve/v1/svdserve.pb.h"\n' \
    > "$tree/server/grpc/service.cpp"
  printf '#include "kernels/errors.hpp"\n#include <cuda_runtime.h>\n' > "$tree/kernels/gpu/k.cu"
}

self_test() {
  local scratch tree failures=0 case file line
  scratch=$(mktemp -d)
  tree=$scratch/tree
  plant_clean "$tree"
  if ! check "$tree" > /dev/null; then
    echo "self-test: a clean tree was refused"
    failures=1
  fi
  local cases=(
    'server/runtime/job.hpp|#include "svdserve/v1/svdserve.pb.h"'
    'server/runtime/job.hpp|#include "svdserve/v1/config.pb.h"'
    'server/runtime/pipeline.cpp|#include <grpcpp/support/status.h>'
    'server/runtime/pipeline.cpp|  #  include <grpc/grpc.h>'
    'server/runtime/codec.cpp|#include <google/protobuf/message.h>'
    'server/runtime/pipeline.cpp|#include "server/grpc/status_mapping.hpp"'
    'server/runtime/pool.cpp|#include "server/process/logging.hpp"'
    'server/runtime/pipeline.cpp|#include "server/auth/token_table.hpp"'
    'server/runtime/factor_store.cpp|#include "server/repository/factor_cache.hpp"'
    'server/repository/factor_cache.cpp|#include <grpcpp/grpcpp.h>'
    'server/repository/factor_codec.hpp|#include "svdserve/v1/config.pb.h"'
    'server/repository/factor_cache.cpp|#include "server/grpc/service.hpp"'
    'server/repository/directory_repository.cpp|#include "server/process/config.hpp"'
    'server/repository/redis_repository.cpp|#include <grpcpp/grpcpp.h>'
    'server/auth/token_table.cpp|#include <grpcpp/grpcpp.h>'
    'server/auth/token_file.hpp|#include "svdserve/v1/config.pb.h"'
    'server/auth/token_table.cpp|#include "server/grpc/authorizer.hpp"'
    'server/auth/token_file.cpp|#include "server/process/config.hpp"'
    'server/grpc/service.cpp|#include "server/process/metrics_sink.hpp"'
    'kernels/gpu/k.cu|#include "server/runtime/job.hpp"'
    'kernels/backend.hpp|#include "client/client.hpp"'
    'kernels/cpu/backend.cpp|#include <grpcpp/grpcpp.h>'
    'kernels/gpu/k.cuh|#include "svdserve/v1/svdserve.pb.h"'
  )
  for case in "${cases[@]}"; do
    file=${case%%|*}
    line=${case#*|}
    plant_clean "$tree"
    mkdir -p "$(dirname "$tree/$file")"
    printf '%s\n' "$line" >> "$tree/$file"
    if check "$tree" > /dev/null; then
      echo "self-test: not caught: $file: $line"
      failures=1
    fi
  done
  rm -rf "$scratch"
  [ $failures -eq 0 ] && echo "self-test: ${#cases[@]} forbidden includes caught, a clean tree passes"
  return $failures
}

case "${1:-}" in
  --self-test) self_test ;;
  "") echo "usage: $0 ROOT | --self-test" >&2; exit 2 ;;
  *) check "$1" && echo "layering ok: server/runtime, server/repository, server/auth, server/grpc, kernels" ;;
esac
