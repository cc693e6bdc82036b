#pragma once
// JPEG decoding on the device with nvJPEG, straight into the buffer the sample conversion reads,
// on the batch's stream: no decoded pixels cross PCIe. Baseline JPEGs go to the GPU's hardware
// JPEG engines (A100, H100) through nvJPEG's batched hardware backend; the rest, and everything
// on GPUs without the engines, to nvJPEG's CUDA backend. Plain C++: no nvcc needed.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/jpeg_header.hpp"
#include "kernels/gpu/jpeg/nvjpeg_api.hpp"

namespace svdserve::gpu {

// One JPEG of a batch and where its u8 samples go: height x width x channels, HWC (BGR or grey,
// as OpenCV decodes it), on the device.
struct JpegToDecode {
  std::span<const std::byte> bytes;
  std::byte* device_samples = nullptr;
};

// Per-stream decoding state: nvJPEG's states are not thread-safe, so each stream has its own.
class JpegStreamState;

class JpegDecoder {
 public:
  // On the current device. Null when nvJPEG cannot be loaded or set up; `why` then says why.
  [[nodiscard]] static std::unique_ptr<JpegDecoder> create(std::string& why);
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // "nvJPEG 13 hardware engines" or "nvJPEG 13 CUDA backend": for the device description.
  [[nodiscard]] const std::string& description() const noexcept { return description_; }

  // The JPEGs this decoder takes: 8-bit grey or YCbCr, sequential Huffman (baseline or extended),
  // complete, with well-formed tables and headers (nvJPEG's parser is not made for hostile
  // input). Progressive, 12-bit, CMYK and damaged files are left to the CPU decoders, which
  // either decode them or say why not.
  [[nodiscard]] static bool takes(const JpegHeader& header) noexcept;

  [[nodiscard]] std::unique_ptr<JpegStreamState> make_stream_state() const;

  // Decodes every JPEG of a batch (all of the given shape) into its device buffer, enqueued on
  // `stream`. Throws InvalidArgument naming the first image nvJPEG cannot decode (corrupt data),
  // ResourceExhausted when nvJPEG runs out of memory, InternalError otherwise.
  void decode(JpegStreamState& state, std::span<const JpegToDecode> jpegs, uint32_t width,
              uint32_t channels, cudaStream_t stream) const;

 private:
  JpegDecoder(const nvjpeg::Api& api, nvjpeg::Handle hardware, nvjpeg::Handle cuda);

  // Decodes images one by one on the CUDA backend; `indices` name them in the batch.
  void decode_one_by_one(JpegStreamState& state, std::span<const JpegToDecode> jpegs,
                         std::span<const std::size_t> indices, uint32_t width, uint32_t channels,
                         cudaStream_t stream) const;

  const nvjpeg::Api& api_;
  nvjpeg::Handle hardware_;  // null where the GPU has no JPEG engines
  nvjpeg::Handle cuda_;
  std::string description_;
};

class JpegStreamState {
 public:
  ~JpegStreamState();
  JpegStreamState(const JpegStreamState&) = delete;
  JpegStreamState& operator=(const JpegStreamState&) = delete;

 private:
  friend class JpegDecoder;
  explicit JpegStreamState(const nvjpeg::Api& api) : api_(api) {}

  const nvjpeg::Api& api_;
  nvjpeg::State hardware_state = nullptr;
  nvjpeg::JpegStream parsed = nullptr;  // header parsed for the hardware-support check
  nvjpeg::State cuda_state = nullptr;
  // The hardware state is initialised for one batch size and output format at a time.
  int initialised_batch = 0;
  int initialised_format = -1;
};

}  // namespace svdserve::gpu
