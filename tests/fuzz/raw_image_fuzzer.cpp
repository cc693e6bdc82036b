// An ImageInput message as a client may send it (encoded bytes or raw samples with a claimed
// shape and sample type), parsed and handed to the loader as the service does.

#include <cstddef>
#include <cstdint>

#include "server/grpc/request_translation.hpp"
#include "server/runtime/image_codec.hpp"
#include "svdserve/v1/svdserve.pb.h"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace svdserve;
  static const ImageLimits limits{.max_width = 512, .max_height = 512, .max_bytes = 1u << 20};
  v1::ImageInput input;
  if (!input.ParseFromArray(data, static_cast<int>(size))) return 0;
  fuzz::expect_answer_or_typed_error([&] {
    const DecodedImage image = decode_image(image_source_of(input), limits);
    (void)image;
  });
  return 0;
}
