#include "kernels/gpu/gpu_reconstruct.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/gpu_factors.hpp"
#include "kernels/gpu/reconstruct/fused.hpp"
#include "kernels/gpu/reconstruct/output_tensor_map.hpp"
#include "kernels/gpu/reconstruct/policy.hpp"
#include "kernels/trace.hpp"

namespace svdserve::gpu {
namespace {

bool is_pinned(const void* pointer) {
  cudaPointerAttributes attributes{};
  SVDSERVE_CUDA_CHECK(cudaPointerGetAttributes(&attributes, pointer));
  return attributes.type == cudaMemoryTypeHost;
}

const GpuFactors& checked_factors(const ReconstructItem& item, const ImageShape& shape) {
  const auto* factors = dynamic_cast<const GpuFactors*>(item.factors);
  if (factors == nullptr) throw InternalError("factors were not made by the GPU backend");
  if (!(factors->shape() == shape)) throw InternalError("a GPU batch mixed image shapes");
  if (item.rank < 1 || item.rank > factors->rank_kept()) {
    throw InvalidArgument("rank " + std::to_string(item.rank) + " is outside 1.." +
                          std::to_string(factors->rank_kept()));
  }
  if (item.output.size() != shape.values() * bytes_per_value(item.pixels)) {
    throw InternalError("output buffer has the wrong size for the image");
  }
  return *factors;
}

}  // namespace

StagedOutputs enqueue_reconstruct(StreamContext& context, std::span<const ReconstructItem> items) {
  if (items.front().factors == nullptr) throw InternalError("a reconstruct item has no factors");
  const ImageShape shape = items.front().factors->shape();
  const StreamView stream = context.stream.view();
  // Device output offsets, and each item's task; validated before anything is enqueued.
  std::vector<ReconstructTask> tasks(items.size());
  std::vector<std::size_t> offsets(items.size());
  std::size_t output_bytes = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const GpuFactors& factors = checked_factors(items[i], shape);
    // Each output aligned for the copy engine's tensor maps (output_tensor_map.hpp).
    output_bytes = (output_bytes + kOutputMapAlignment - 1) / kOutputMapAlignment *
                   kOutputMapAlignment;
    offsets[i] = output_bytes;
    output_bytes += items[i].output.size();
    tasks[i] = {factors.us(), factors.v(), items[i].rank, factors.rank_kept(), nullptr,
                factors.wgmma_operands()};
  }
  // Everything that can fail on the host (allocations, pointer queries) before the first enqueue.
  std::vector<char> pinned(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) pinned[i] = is_pinned(items[i].output.data());
  if (std::ranges::count(pinned, 0) > 0) context.staging_out.grow_to(output_bytes);
  context.output.grow_to(output_bytes);
  for (std::size_t i = 0; i < items.size(); ++i) {
    tasks[i].out = context.output.as<std::byte>() + offsets[i];
  }

  // One launch per output type (a batch may mix u8 and f32 requests), each over a contiguous
  // part of one task table, on the variant the policy chooses for it.
  struct Launch {
    ReconstructLaunch traits;
    std::size_t first = 0;
    std::size_t count = 0;
  };
  const ReconstructArch arch = current_reconstruct_arch();
  std::vector<ReconstructTask> table;
  std::vector<Launch> launches;
  for (OutputPixels pixels : {OutputPixels::u8, OutputPixels::f32}) {
    // An image whose values FP16 operands cannot hold has none (gpu_factors.hpp).
    Launch launch{{.arch = arch, .pixels = pixels, .max_rank = 0, .wgmma_operands = true},
                  table.size(), 0};
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (items[i].pixels != pixels) continue;
      table.push_back(tasks[i]);
      launch.traits.max_rank = std::max(launch.traits.max_rank, items[i].rank);
      launch.traits.wgmma_operands =
          launch.traits.wgmma_operands && tasks[i].wgmma_operands != nullptr;
    }
    launch.count = table.size() - launch.first;
    if (launch.count == 0) continue;
    // wgmma stores its tiles through the outputs' tensor maps (output_tensor_map.hpp).
    if (choose_variant(launch.traits) == FusedVariant::wgmma) {
      for (std::size_t t = launch.first; t < table.size(); ++t) encode_output_map(table[t], shape);
    }
    launches.push_back(launch);
  }
  const std::size_t table_bytes = table.size() * sizeof(ReconstructTask);
  context.staging_in.grow_to(table_bytes);
  context.input.grow_to(table_bytes);
  {
    trace::ScopedRange stage("reconstruct_kernel");
    std::memcpy(context.staging_in.data(), table.data(), table_bytes);
    SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(context.input.data(), context.staging_in.data(),
                                        table_bytes, cudaMemcpyHostToDevice, stream.value()));
    for (const Launch& launch : launches) {
      launch_fused_reconstruct(context.input.as<ReconstructTask>() + launch.first,
                               static_cast<uint32_t>(launch.count), shape, launch.traits, stream);
    }
  }

  trace::ScopedRange stage("d2h");
  StagedOutputs staged;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::span<std::byte> destination = items[i].output;
    const bool direct = pinned[i] != 0;
    void* target = direct ? destination.data() : context.staging_out.as<std::byte>() + offsets[i];
    SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(target, context.output.as<std::byte>() + offsets[i],
                                        destination.size(), cudaMemcpyDeviceToHost,
                                        stream.value()));
    if (!direct) staged.push_back({destination, offsets[i]});
  }
  context.completed.record(stream);
  return staged;
}

void copy_out(const StreamContext& context, const StagedOutputs& staged, WorkerPool& workers) {
  trace::ScopedRange stage("copy_out");
  constexpr std::size_t kPieceBytes = std::size_t{1} << 20;
  struct Piece {
    std::byte* destination;
    const std::byte* source;
    std::size_t bytes;
  };
  std::vector<Piece> pieces;
  for (const StagedOutput& output : staged) {
    const std::byte* source = context.staging_out.as<std::byte>() + output.staging_offset;
    for (std::size_t at = 0; at < output.destination.size(); at += kPieceBytes) {
      pieces.push_back({output.destination.data() + at, source + at,
                        std::min(kPieceBytes, output.destination.size() - at)});
    }
  }
  if (pieces.size() == 1) {
    std::memcpy(pieces[0].destination, pieces[0].source, pieces[0].bytes);
    return;
  }
  workers.run(pieces.size(), [&](std::size_t index, unsigned) {
    std::memcpy(pieces[index].destination, pieces[index].source, pieces[index].bytes);
  });
}

}  // namespace svdserve::gpu
