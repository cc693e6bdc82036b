#pragma once
// One unit of work travelling through the pipeline: admission -> (loader: read + decode) ->
// batcher -> worker (compute + encode) -> on_done. Every job that is admitted reaches on_done
// exactly once, with an error or without.

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/factors.hpp"
#include "kernels/image.hpp"
#include "server/runtime/pixel_bytes.hpp"
#include "svdserve/v1/svdserve.pb.h"

namespace svdserve {

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

// Exactly one is set: a rank, or a fraction of the energy to keep.
struct RankSelection {
  uint32_t rank = 0;
  double energy_fraction = 0.0;
};

struct StageTimes {
  double queue_us = 0;
  double decode_us = 0;
  double compute_us = 0;
  double encode_us = 0;
  uint32_t batch_size = 0;
};

struct Job {
  JobKind kind = JobKind::reconstruct;

  // Inputs. Decompose and compress read `input` (owned by the RPC's request message, which lives
  // until the RPC finishes, i.e. after on_done) or, for LoadDirectory, the file at source_path.
  const v1::ImageInput* input = nullptr;
  std::string source_path;
  std::string image_id;
  uint32_t max_rank = 0;  // decompose
  RankSelection rank_choice;  // reconstruct, compress
  v1::OutputFormat format = v1::OUTPUT_FORMAT_RAW_U8;
  // Raw pixels go into pool memory, which the response hands to gRPC as it is (the zero-copy
  // Reconstruct path). Otherwise they go into a string, which a protobuf response takes.
  bool pixels_in_pool = false;

  // Filled in on the way.
  DecodedImage image;                      // after decode
  std::shared_ptr<const Factors> factors;  // reconstruct: at admission; decompose: after compute
  uint32_t rank = 0;                       // the rank used (reconstruct, compress)
  double relative_error = 0.0;
  PixelBytes pixels;  // raw u8/f32 or PNG bytes
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

// Maps a gRPC deadline (system clock) onto the pipeline's steady clock.
[[nodiscard]] inline Clock::time_point to_steady_deadline(
    std::chrono::system_clock::time_point deadline) {
  const auto now_system = std::chrono::system_clock::now();
  if (deadline >= std::chrono::system_clock::time_point::max() - std::chrono::hours(24 * 365)) {
    return Clock::time_point::max();
  }
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(deadline - now_system);
}

}  // namespace svdserve
