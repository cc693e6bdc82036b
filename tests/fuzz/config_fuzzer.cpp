// Config files as an operator may write them (any text): read from a real file, completed with
// defaults and validated as the server does at startup, or refused with a typed error.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "server/process/config.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace svdserve;
  static const std::string path = "/tmp/svdserve-config-fuzz." + std::to_string(::getpid());
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) __builtin_trap();
  if (size > 0 && std::fwrite(data, 1, size, file) != size) __builtin_trap();
  std::fclose(file);
  fuzz::expect_answer_or_typed_error([&] {
    v1::ServerConfig config = read_config_file(path);
    apply_defaults(config);
    validate(config);
  });
  return 0;
}
