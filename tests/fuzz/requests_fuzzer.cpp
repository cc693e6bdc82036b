// Requests as a hostile client may send them: any bytes, to any unary method of a real server
// (CPU backend, in this process, over loopback gRPC). Every call must end with a status; the
// server must never fail with INTERNAL or UNKNOWN (errors are typed inside and mapped at the
// boundary) and must keep answering. The first input byte picks the method.

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "server/process/config.hpp"
#include "server/process/server.hpp"

namespace {

using namespace svdserve;

constexpr std::array<const char*, 13> kMethods = {
    "Decompose", "Reconstruct", "ReconstructBatch", "Compress",      "GetImage",
    "ListImages", "DeleteImage", "GetServerInfo",   "GetStats",      "Echo",
    "LoadDirectory", "StartProfiling", "StopProfiling"};

// LoadDirectory's root: empty but for one folder, so that paths are checked and walked but no
// input spends time decoding (make_seeds.py names it).
std::string load_root() {
  namespace fs = std::filesystem;
  const fs::path root = fs::canonical(fs::temp_directory_path()) / "svdserve-fuzz-load-root";
  std::filesystem::create_directories(root / "sub");
  return root.string();
}

// Small limits keep one input to milliseconds; the code paths are the same at any size.
v1::ServerConfig fuzz_config() {
  v1::ServerConfig config;
  config.set_listen_address("127.0.0.1:0");
  config.set_backend(v1::BACKEND_KIND_CPU);
  config.set_worker_threads(1);
  config.set_loader_threads(1);
  config.set_max_image_width(256);
  config.set_max_image_height(256);
  config.set_max_image_bytes(1u << 20);
  config.set_log_level("error");
  config.add_load_roots(load_root());
  apply_defaults(config);
  validate(config);
  return config;
}

struct Harness {
  Harness() : server(fuzz_config()) {
    server.set_serving(true);
    channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server.port()),
                                  grpc::InsecureChannelCredentials());
    stub = std::make_unique<grpc::GenericStub>(channel);
  }
  Server server;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<grpc::GenericStub> stub;
};

grpc::Status call(Harness& harness, const std::string& method, const uint8_t* data,
                  std::size_t size) {
  grpc::Slice slice(data, size);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  grpc::Status status;
  harness.stub->UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                          [&](grpc::Status result) {
                            std::lock_guard lock(mutex);
                            status = std::move(result);
                            finished = true;
                            done.notify_one();
                          });
  std::unique_lock lock(mutex);
  done.wait(lock, [&] { return finished; });
  return status;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static Harness harness;
  if (size == 0) return 0;
  const std::string method =
      std::string("/svdserve.v1.SvdServe/") + kMethods[data[0] % kMethods.size()];
  const grpc::Status status = call(harness, method, data + 1, size - 1);
  if (status.error_code() == grpc::StatusCode::INTERNAL ||
      status.error_code() == grpc::StatusCode::UNKNOWN ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    std::fprintf(stderr, "%s answered %d: %s\n", method.c_str(),
                 static_cast<int>(status.error_code()), status.error_message().c_str());
    __builtin_trap();
  }
  return 0;
}
