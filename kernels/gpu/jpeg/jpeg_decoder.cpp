#include "kernels/gpu/jpeg/jpeg_decoder.hpp"

#include <string>

#include "kernels/errors.hpp"
#include "kernels/gpu/jpeg/nvjpeg_library.hpp"
#include "kernels/trace.hpp"

namespace svdserve::gpu {
namespace {

// The batched hardware decoder parses on the host before it hands work to the engines; one
// thread per call is enough because each stream's worker calls it concurrently.
constexpr int kHostThreadsPerBatch = 1;

[[nodiscard]] int output_format(uint32_t channels) noexcept {
  return channels == 1 ? nvjpeg::kOutputY : nvjpeg::kOutputBgrI;
}

[[nodiscard]] nvjpeg::Image destination(const JpegToDecode& jpeg, uint32_t width,
                                        uint32_t channels) noexcept {
  nvjpeg::Image image{};
  image.channel[0] = reinterpret_cast<unsigned char*>(jpeg.device_samples);
  image.pitch[0] = std::size_t{width} * channels;
  return image;
}

[[nodiscard]] const unsigned char* data_of(const JpegToDecode& jpeg) noexcept {
  return reinterpret_cast<const unsigned char*>(jpeg.bytes.data());
}

// Data errors are the client's; memory is retryable; the rest is ours.
[[nodiscard]] bool is_data_error(nvjpeg::Status status) noexcept {
  return status == nvjpeg::kBadJpeg || status == nvjpeg::kJpegNotSupported ||
         status == nvjpeg::kIncompleteBitstream;
}

void check(nvjpeg::Status status, const char* call) {
  if (status == nvjpeg::kSuccess) return;
  const std::string what = std::string("nvJPEG ") + call + " failed: " + nvjpeg::status_name(status);
  if (status == nvjpeg::kAllocatorFailure) throw ResourceExhausted(what);
  throw InternalError(what);
}

void check_image(nvjpeg::Status status, std::size_t index) {
  if (status == nvjpeg::kSuccess) return;
  if (is_data_error(status)) {
    throw InvalidArgument("image " + std::to_string(index) +
                          " of the batch is a damaged or unsupported JPEG (" +
                          nvjpeg::status_name(status) + ")");
  }
  check(status, "decode");
}

}  // namespace

std::unique_ptr<JpegDecoder> JpegDecoder::create(std::string& why) {
  const nvjpeg::Library& library = nvjpeg::library();
  if (library.api == nullptr) {
    why = library.description;
    return nullptr;
  }
  const nvjpeg::Api& api = *library.api;
  // Interpolated chroma where the backend offers it: OpenCV's decoder interpolates too.
  const auto create_handle = [&api](int backend, nvjpeg::Handle& handle) {
    nvjpeg::Status status = api.nvjpegCreateEx(backend, nullptr, nullptr,
                                               nvjpeg::kFlagUpsamplingWithInterpolation, &handle);
    if (status != nvjpeg::kSuccess) {
      handle = nullptr;
      status = api.nvjpegCreateEx(backend, nullptr, nullptr, 0, &handle);
    }
    if (status != nvjpeg::kSuccess) handle = nullptr;
    return status;
  };
  nvjpeg::Handle hardware = nullptr;
  // Refused (architecture mismatch, not supported) where the GPU has no JPEG engines.
  (void)create_handle(nvjpeg::kBackendHardware, hardware);
  nvjpeg::Handle cuda = nullptr;
  const nvjpeg::Status status = create_handle(nvjpeg::kBackendDefault, cuda);
  if (status != nvjpeg::kSuccess) {
    if (hardware != nullptr) api.nvjpegDestroy(hardware);
    why = std::string("nvJPEG could not be set up: ") + nvjpeg::status_name(status);
    return nullptr;
  }
  return std::unique_ptr<JpegDecoder>(new JpegDecoder(api, hardware, cuda));
}

JpegDecoder::JpegDecoder(const nvjpeg::Api& api, nvjpeg::Handle hardware, nvjpeg::Handle cuda)
    : api_(api), hardware_(hardware), cuda_(cuda) {
  description_ = std::string(nvjpeg::library().description) +
                 (hardware_ != nullptr ? " on the hardware JPEG engines" : " on CUDA cores");
}

JpegDecoder::~JpegDecoder() {
  if (hardware_ != nullptr) api_.nvjpegDestroy(hardware_);
  api_.nvjpegDestroy(cuda_);
}

bool JpegDecoder::takes(const JpegHeader& header) noexcept {
  return header.complete && header.well_formed && header.precision == 8 &&
         (header.components == 1 || header.components == 3) &&
         (header.coding == JpegCoding::baseline || header.coding == JpegCoding::extended);
}

std::unique_ptr<JpegStreamState> JpegDecoder::make_stream_state() const {
  std::unique_ptr<JpegStreamState> state(new JpegStreamState(api_));
  if (hardware_ != nullptr) {
    check(api_.nvjpegJpegStateCreate(hardware_, &state->hardware_state), "state create");
    check(api_.nvjpegJpegStreamCreate(hardware_, &state->parsed), "stream create");
  }
  check(api_.nvjpegJpegStateCreate(cuda_, &state->cuda_state), "state create");
  return state;
}

JpegStreamState::~JpegStreamState() {
  if (parsed != nullptr) api_.nvjpegJpegStreamDestroy(parsed);
  if (hardware_state != nullptr) api_.nvjpegJpegStateDestroy(hardware_state);
  if (cuda_state != nullptr) api_.nvjpegJpegStateDestroy(cuda_state);
}

void JpegDecoder::decode(JpegStreamState& state, std::span<const JpegToDecode> jpegs,
                         uint32_t width, uint32_t channels, cudaStream_t stream) const {
  if (jpegs.empty()) return;
  trace::ScopedRange range("jpeg_decode");
  std::vector<std::size_t> on_engines;
  std::vector<std::size_t> on_cuda;
  for (std::size_t i = 0; i < jpegs.size(); ++i) {
    int unsupported = 1;  // nvJPEG reports 0 for "supported"
    if (hardware_ != nullptr &&
        api_.nvjpegJpegStreamParseHeader(hardware_, data_of(jpegs[i]), jpegs[i].bytes.size(),
                                         state.parsed) == nvjpeg::kSuccess &&
        api_.nvjpegDecodeBatchedSupported(hardware_, state.parsed, &unsupported) ==
            nvjpeg::kSuccess &&
        unsupported == 0) {
      on_engines.push_back(i);
    } else {
      on_cuda.push_back(i);
    }
  }

  if (!on_engines.empty()) {
    std::vector<const unsigned char*> data;
    std::vector<std::size_t> lengths;
    std::vector<nvjpeg::Image> destinations;
    for (std::size_t i : on_engines) {
      data.push_back(data_of(jpegs[i]));
      lengths.push_back(jpegs[i].bytes.size());
      destinations.push_back(destination(jpegs[i], width, channels));
    }
    const int batch = static_cast<int>(on_engines.size());
    const int format = output_format(channels);
    if (batch != state.initialised_batch || format != state.initialised_format) {
      check(api_.nvjpegDecodeBatchedInitialize(hardware_, state.hardware_state, batch,
                                               kHostThreadsPerBatch, format),
            "batched initialise");
      state.initialised_batch = batch;
      state.initialised_format = format;
    }
    const nvjpeg::Status status =
        api_.nvjpegDecodeBatched(hardware_, state.hardware_state, data.data(), lengths.data(),
                                 destinations.data(), stream);
    if (is_data_error(status)) {
      // The batch call does not say which image is damaged: decode them singly to find out.
      decode_one_by_one(state, jpegs, on_engines, width, channels, stream);
    } else {
      check(status, "batched decode");
    }
  }
  decode_one_by_one(state, jpegs, on_cuda, width, channels, stream);
}

void JpegDecoder::decode_one_by_one(JpegStreamState& state, std::span<const JpegToDecode> jpegs,
                                    std::span<const std::size_t> indices, uint32_t width,
                                    uint32_t channels, cudaStream_t stream) const {
  for (std::size_t i : indices) {
    nvjpeg::Image image = destination(jpegs[i], width, channels);
    check_image(api_.nvjpegDecode(cuda_, state.cuda_state, data_of(jpegs[i]), jpegs[i].bytes.size(),
                                  output_format(channels), &image, stream),
                i);
  }
}

}  // namespace svdserve::gpu
