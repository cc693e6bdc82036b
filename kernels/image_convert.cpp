#include <cstring>

#include "kernels/errors.hpp"
#include "kernels/image.hpp"

namespace svdserve {
namespace {

template <typename Sample>
void deinterleave(const DecodedImage& in, ImageF32& out) {
  const std::size_t pixels = in.shape.pixels_per_channel();
  const uint32_t channels = in.shape.channels;
  const float scale = sample_scale(in.type);
  const auto* samples = reinterpret_cast<const Sample*>(in.samples.data());
  for (uint32_t c = 0; c < channels; ++c) {
    float* plane = out.plane(c).data();
    for (std::size_t p = 0; p < pixels; ++p) {
      plane[p] = static_cast<float>(samples[p * channels + c]) * scale;
    }
  }
}

}  // namespace

ImageF32 to_planes(const DecodedImage& image) {
  if (image.samples.size() != image.shape.values() * bytes_per_sample(image.type)) {
    throw InvalidArgument("decoded image holds " + std::to_string(image.samples.size()) +
                          " bytes; its shape needs " +
                          std::to_string(image.shape.values() * bytes_per_sample(image.type)));
  }
  ImageF32 planes;
  planes.shape = image.shape;
  planes.planes.resize(image.shape.values());
  switch (image.type) {
    case SampleType::u8: deinterleave<uint8_t>(image, planes); break;
    case SampleType::u16: deinterleave<uint16_t>(image, planes); break;
    case SampleType::f32: deinterleave<float>(image, planes); break;
  }
  return planes;
}

DecodedImage to_decoded(const ImageF32& image) {
  if (image.planes.size() != image.shape.values()) {
    throw InvalidArgument("image holds " + std::to_string(image.planes.size()) +
                          " values; its shape needs " + std::to_string(image.shape.values()));
  }
  DecodedImage decoded;
  decoded.shape = image.shape;
  decoded.type = SampleType::f32;
  decoded.samples.resize(image.shape.values() * sizeof(float));
  auto* out = reinterpret_cast<float*>(decoded.samples.data());
  const std::size_t pixels = image.shape.pixels_per_channel();
  const uint32_t channels = image.shape.channels;
  for (uint32_t c = 0; c < channels; ++c) {
    const float* plane = image.plane(c).data();
    for (std::size_t p = 0; p < pixels; ++p) out[p * channels + c] = plane[p];
  }
  return decoded;
}

}  // namespace svdserve
