// Encoded images as a client may send them (any bytes), through the loader's decoder with small
// limits so that one input costs milliseconds: decoded, or refused with a typed error.

#include <cstddef>
#include <cstdint>

#include "server/runtime/image_codec.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace svdserve;
  static const ImageLimits limits{.max_width = 512, .max_height = 512, .max_bytes = 1u << 20};
  fuzz::expect_answer_or_typed_error([&] {
    const DecodedImage image = decode_encoded(fuzz::bytes_of(data, size), limits);
    (void)image;
  });
  return 0;
}
