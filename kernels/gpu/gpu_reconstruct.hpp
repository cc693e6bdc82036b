#pragma once
// One reconstruct batch on one leased stream, split in the two halves the completion thread
// needs: enqueue (validate, task tables up, kernels, copies down, record the context's
// `completed` event) and, once that event has fired, copy_out (outputs that are not in pinned
// memory come out of pinned staging). Outputs already in pinned memory get the device-to-host
// copy straight into them: no host copy at all.

#include <cstddef>
#include <span>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cpu/worker_pool.hpp"
#include "kernels/gpu/common/stream_pool.hpp"

namespace svdserve::gpu {

struct StagedOutput {
  std::span<std::byte> destination;
  std::size_t staging_offset = 0;
};
using StagedOutputs = std::vector<StagedOutput>;

// Throws InvalidArgument / InternalError before anything is enqueued when an item is invalid.
[[nodiscard]] StagedOutputs enqueue_reconstruct(StreamContext& context,
                                                std::span<const ReconstructItem> items);

// After context.completed has fired. The copy is split into pieces over `workers`: one thread
// copies out of pinned memory at a fraction of PCIe speed, and a batch of 16 1024² images is
// 50 MB (measured: a one-thread copy-out held the gRPC server to 58% of its echo limit).
void copy_out(const StreamContext& context, const StagedOutputs& staged, WorkerPool& workers);

}  // namespace svdserve::gpu
