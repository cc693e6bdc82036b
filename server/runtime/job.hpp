#pragma once
// One unit of work travelling through the pipeline: admission -> (loader: read + decode) ->
// batcher -> worker (compute) -> (encoder: PNG or JPEG) -> on_done. Every job that is admitted reaches on_done
// exactly once, with an error or without. Plain C++: the gRPC layer translates requests into
// jobs and results back into responses.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "kernels/factors.hpp"
#include "kernels/image.hpp"
#include "server/runtime/pixel_bytes.hpp"
#include "server/runtime/rank_validator.hpp"

namespace svdserve {

class ConfinedFolder;

using Clock = std::chrono::steady_clock;

enum class JobKind { decompose, reconstruct, compress };

[[nodiscard]] constexpr const char* job_kind_name(JobKind kind) noexcept {
  switch (kind) {
    case JobKind::decompose: return "decompose";
    case JobKind::reconstruct: return "reconstruct";
    case JobKind::compress: return "compress";
  }
  return "?";
}

// How a reconstruction's pixels leave the server: interleaved u8 or f32 samples, or a PNG or
// JPEG of the u8 samples.
enum class OutputFormat { raw_u8, png, raw_f32, jpeg };

// PNG and JPEG are made from the u8 reconstruction on the encoder threads.
[[nodiscard]] constexpr bool is_encoded(OutputFormat format) noexcept {
  return format == OutputFormat::png || format == OutputFormat::jpeg;
}

// The pixel bytes a reconstruction answers with: its raw samples, or for PNG and JPEG the u8
// samples they are made from (an encoded answer is about that size at most).
[[nodiscard]] inline uint64_t reconstruction_bytes(const ImageShape& shape,
                                                   OutputFormat format) noexcept {
  return uint64_t{shape.values()} * (format == OutputFormat::raw_f32 ? sizeof(float) : 1);
}

// libjpeg's 1..100 scale. 90: 13-22 % of PNG's bytes on fruits.jpg and starry_night.jpg at ranks
// 20, 100 and full.
inline constexpr uint32_t kDefaultJpegQuality = 90;
inline constexpr uint32_t kMaxJpegQuality = 100;

// Where a decompose or compress job's image comes from. The spans point into the RPC's request,
// which lives until the RPC finishes, i.e. after on_done.
struct EncodedImage {
  std::span<const std::byte> bytes;  // PNG, JPEG, TIFF, BMP, PNM or WebP (image_format.hpp)
};
struct RawPixels {
  uint32_t width = 0;
  uint32_t height = 0;
  uint32_t channels = 0;
  std::optional<SampleType> type;      // empty: the request did not say
  std::span<const std::byte> samples;  // HWC interleaved
};
// A file on the server (LoadDirectory), read from its load root without following links.
struct ImageFile {
  std::shared_ptr<const ConfinedFolder> root;
  std::string path;  // below the root
};
using ImageSource = std::variant<std::monostate, EncodedImage, RawPixels, ImageFile>;

struct StageTimes {
  double queue_us = 0;
  double decode_us = 0;
  double compute_us = 0;
  double encode_us = 0;
  uint32_t batch_size = 0;
};

struct Job {
  JobKind kind = JobKind::reconstruct;
  const char* method = "";  // the RPC the job answers: a metrics label

  // Inputs.
  ImageSource source;  // decompose, compress
  std::string image_id;
  uint32_t max_rank = 0;      // decompose
  RankSelection rank_choice;  // reconstruct, compress
  OutputFormat format = OutputFormat::raw_u8;
  uint32_t jpeg_quality = kDefaultJpegQuality;  // 1..100, for OutputFormat::jpeg
  // Raw pixels go into pool memory, which the response hands to gRPC as it is (the zero-copy
  // Reconstruct path). Otherwise they go into a string, which a protobuf response takes.
  bool pixels_in_pool = false;

  // Filled in on the way.
  DecodedImage image;                      // after decode
  std::shared_ptr<const Factors> factors;  // reconstruct: at admission; decompose: after compute
  uint32_t rank = 0;                       // the rank used (reconstruct, compress)
  double relative_error = 0.0;
  PixelBytes pixels;  // raw u8/f32, PNG or JPEG bytes
  std::vector<std::string> evicted_ids;

  // Control. Deadline and cancellation are checked at every stage boundary.
  Clock::time_point arrived = Clock::now();
  Clock::time_point stage_entered = arrived;
  Clock::time_point deadline = Clock::time_point::max();
  std::function<bool()> is_cancelled;  // empty: cannot be cancelled
  bool wait_for_room = false;          // admission waits (until the deadline) instead of refusing
  StageTimes times;
  bool answered = false;  // set by the pipeline when on_done has been called

  std::function<void(Job&, std::exception_ptr)> on_done;
};

using JobPtr = std::unique_ptr<Job>;

}  // namespace svdserve
