#include "kernels/gpu/gpu_backend.hpp"

#include <cuda_profiler_api.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/errors.hpp"
#include "kernels/gpu/cuda_check.hpp"
#include "kernels/gpu/device_memory_pool.hpp"
#include "kernels/gpu/gpu_factors.hpp"
#include "kernels/gpu/reconstruct.hpp"
#include "kernels/gpu/stream_pool.hpp"
#include "kernels/trace.hpp"

namespace svdserve::gpu {
namespace {

// The pool may briefly hold a batch more than the store's budget: factors are made before the
// store evicts to fit them.
constexpr double kPoolHeadroom = 1.1;

// Makes options.device current on the calling thread (the device is per thread in CUDA).
const GpuBackendOptions& on_device(const GpuBackendOptions& options) {
  SVDSERVE_CUDA_CHECK(cudaSetDevice(options.device));
  return options;
}

const ImageShape& common_shape(std::span<const ImageF32* const> images) {
  const ImageShape& shape = images.front()->shape;
  for (const ImageF32* image : images) {
    if (!(image->shape == shape)) throw InternalError("a GPU batch mixed image shapes");
  }
  return shape;
}

class GpuBackend final : public Backend {
 public:
  explicit GpuBackend(const GpuBackendOptions& options)
      : options_(on_device(options)), streams_(std::max(1u, options.streams)) {
    cudaDeviceProp properties{};
    SVDSERVE_CUDA_CHECK(cudaGetDeviceProperties(&properties, options.device));
    std::size_t free_bytes = 0, total_bytes = 0;
    SVDSERVE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    total_bytes_ = total_bytes;
    budget_bytes_ = options.budget_bytes != 0
                        ? options.budget_bytes
                        : static_cast<std::size_t>(options.memory_fraction * free_bytes);
    pool_ = std::make_unique<DeviceMemoryPool>(
        options.device, static_cast<std::size_t>(kPoolHeadroom * budget_bytes_));
    description_ = std::string(properties.name) + " (sm_" + std::to_string(properties.major) +
                   std::to_string(properties.minor) + ", " +
                   std::to_string(properties.multiProcessorCount) + " SMs, " +
                   std::to_string(total_bytes >> 30) + " GiB, " + std::to_string(streams_.size()) +
                   " streams)";
  }

  [[nodiscard]] std::string name() const override { return "gpu"; }
  [[nodiscard]] std::string device_description() const override { return description_; }
  [[nodiscard]] std::size_t default_memory_budget_bytes() const override { return budget_bytes_; }

  std::vector<std::shared_ptr<const Factors>> decompose(std::span<const ImageF32* const> images,
                                                        uint32_t max_rank) override {
    trace::ScopedRange range("gpu_decompose");
    if (images.empty()) return {};
    on_device(options_);
    if (max_rank == 0) throw InvalidArgument("max_rank must be at least 1");
    const ImageShape shape = common_shape(images);
    const uint32_t rank = std::min(max_rank, shape.full_rank());
    const std::size_t plane = shape.pixels_per_channel();
    const std::size_t matrices = images.size() * shape.channels;
    const std::size_t input_bytes = matrices * plane * sizeof(float);

    auto context = streams_.acquire();
    const StreamView stream = context->stream.view();
    std::vector<double> norms_squared(matrices, 0.0);
    {
      trace::ScopedRange stage("h2d");
      context->staging_in.grow_to(input_bytes);
      float* staged = context->staging_in.as<float>();
      for (std::size_t i = 0; i < images.size(); ++i) {
        const auto& planes = images[i]->planes;
        for (float value : planes) {
          if (!std::isfinite(value)) throw InvalidArgument("image contains NaN or infinite values");
        }
        std::memcpy(staged + i * shape.values(), planes.data(), planes.size() * sizeof(float));
        for (uint32_t c = 0; c < shape.channels; ++c) {
          double sum = 0.0;
          for (float value : images[i]->plane(c)) sum += double{value} * value;
          norms_squared[i * shape.channels + c] = sum;
        }
      }
      context->input.grow_to(input_bytes);
      SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(context->input.data(), staged, input_bytes,
                                          cudaMemcpyHostToDevice, stream.value()));
    }

    // A row-major h x w plane is a column-major w x h matrix. cuSOLVER wants m >= n: wide and
    // square planes go as they are (m = w); tall ones are transposed first (m = h).
    const bool wide = shape.width >= shape.height;
    const int m = static_cast<int>(wide ? shape.width : shape.height);
    const int n = static_cast<int>(wide ? shape.height : shape.width);
    const float* a = context->input.as<float>();
    if (!wide) {
      trace::ScopedRange stage("transpose");
      context->transposed.grow_to(input_bytes);
      const float one = 1.0f, zero = 0.0f;
      for (std::size_t i = 0; i < matrices; ++i) {
        float* out = context->transposed.as<float>() + i * plane;
        SVDSERVE_CUBLAS_CHECK(cublasSgeam(context->cublas.value(), CUBLAS_OP_T, CUBLAS_OP_N, m, n,
                                          &one, a + i * plane, n, &zero, out, m, out, m));
      }
      a = context->transposed.as<float>();
    }
    context->u.grow_to(matrices * m * rank * sizeof(float));
    context->s.grow_to(matrices * rank * sizeof(float));
    context->v.grow_to(matrices * n * rank * sizeof(float));
    SvdBatch batch{m, n, static_cast<int>(matrices), static_cast<int>(rank), a,
                   context->u.as<float>(), context->s.as<float>(), context->v.as<float>(),
                   norms_squared};
    const SvdReport report = context->solver.solve(batch, options_.svd_method);
    svd_matrices_ += static_cast<uint64_t>(report.checked);
    svd_matrices_redone_ += static_cast<uint64_t>(report.recomputed);
    if (report.checked > 0) {
      std::lock_guard lock(identity_mutex_);
      identity_range_[0] = std::min(identity_range_[0], report.best_identity_error);
      identity_range_[1] = std::max(identity_range_[1], report.worst_identity_error);
    }

    // Solver U is m x r, V is n x r. Wide: the image's V is the solver's U (m = w) and its US is
    // the solver's V (n = h) scaled by S; tall: the other way round.
    const float* us_source = wide ? context->v.as<float>() : context->u.as<float>();
    const float* v_source = wide ? context->u.as<float>() : context->v.as<float>();
    const int h = static_cast<int>(shape.height);
    const int w = static_cast<int>(shape.width);
    const int r = static_cast<int>(rank);
    std::vector<DeviceAllocation> allocations;
    allocations.reserve(images.size());
    {
      trace::ScopedRange stage("store_factors");
      for (std::size_t i = 0; i < images.size(); ++i) {
        allocations.push_back(pool_->allocate(GpuFactors::bytes_for(shape, rank), stream));
        float* us_out = allocations.back().floats();
        float* v_out = us_out + std::size_t{shape.channels} * h * r;
        for (uint32_t c = 0; c < shape.channels; ++c) {
          const std::size_t index = i * shape.channels + c;
          SVDSERVE_CUBLAS_CHECK(cublasSdgmm(context->cublas.value(), CUBLAS_SIDE_RIGHT, h, r,
                                            us_source + index * h * r, h,
                                            context->s.as<float>() + index * r, 1,
                                            us_out + c * std::size_t(h) * r, h));
          SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(v_out + c * std::size_t(w) * r,
                                              v_source + index * w * r, sizeof(float) * w * r,
                                              cudaMemcpyDeviceToDevice, stream.value()));
        }
      }
      context->staging_out.grow_to(matrices * rank * sizeof(float));
      SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(context->staging_out.data(), context->s.data(),
                                          matrices * rank * sizeof(float), cudaMemcpyDeviceToHost,
                                          stream.value()));
      stream.synchronize();
    }

    std::vector<std::shared_ptr<const Factors>> factors;
    factors.reserve(images.size());
    const float* s_host = context->staging_out.as<float>();
    for (std::size_t i = 0; i < images.size(); ++i) {
      std::vector<std::vector<float>> spectra(shape.channels);
      double energy = 0.0;
      for (uint32_t c = 0; c < shape.channels; ++c) {
        const float* first = s_host + (i * shape.channels + c) * rank;
        spectra[c].assign(first, first + rank);
        energy += norms_squared[i * shape.channels + c];
      }
      factors.push_back(std::make_shared<GpuFactors>(shape, rank, std::move(spectra), energy,
                                                     std::move(allocations[i])));
    }
    return factors;
  }

  void reconstruct(std::span<const ReconstructItem> items) override {
    trace::ScopedRange range("gpu_reconstruct");
    if (items.empty()) return;
    on_device(options_);
    // One launch per output type (a batch may mix u8 and f32 requests).
    for (OutputPixels pixels : {OutputPixels::u8, OutputPixels::f32}) {
      std::vector<const ReconstructItem*> group;
      for (const auto& item : items) {
        if (item.pixels == pixels) group.push_back(&item);
      }
      if (!group.empty()) reconstruct_group(group, pixels);
    }
  }

  [[nodiscard]] BackendMetrics metrics() const override {
    BackendMetrics metrics{pool_->used_bytes(), total_bytes_, streams_.busy_seconds(),
                           svd_matrices_.load(), svd_matrices_redone_.load(), {}};
    std::lock_guard lock(identity_mutex_);
    metrics.svd_identity_error_range[0] = identity_range_[0];
    metrics.svd_identity_error_range[1] = identity_range_[1];
    return metrics;
  }

  void start_profiling() override { SVDSERVE_CUDA_CHECK(cudaProfilerStart()); }
  void stop_profiling() override { SVDSERVE_CUDA_CHECK(cudaProfilerStop()); }

 private:
  void reconstruct_group(const std::vector<const ReconstructItem*>& group, OutputPixels pixels) {
    const ImageShape shape = group.front()->factors->shape();
    const std::size_t image_bytes = shape.values() * bytes_per_value(pixels);
    uint32_t max_rank = 0;
    std::vector<ReconstructTask> tasks;
    tasks.reserve(group.size());
    auto context = streams_.acquire();
    const StreamView stream = context->stream.view();
    context->output.grow_to(group.size() * image_bytes);
    for (std::size_t i = 0; i < group.size(); ++i) {
      const ReconstructItem& item = *group[i];
      const auto* factors = dynamic_cast<const GpuFactors*>(item.factors);
      if (factors == nullptr) throw InternalError("factors were not made by the GPU backend");
      if (!(factors->shape() == shape)) throw InternalError("a GPU batch mixed image shapes");
      if (item.rank < 1 || item.rank > factors->rank_kept()) {
        throw InvalidArgument("rank " + std::to_string(item.rank) + " is outside 1.." +
                              std::to_string(factors->rank_kept()));
      }
      if (item.output.size() != image_bytes) {
        throw InternalError("output buffer has the wrong size for the image");
      }
      tasks.push_back({factors->us(), factors->v(), item.rank, factors->rank_kept(),
                       context->output.as<std::byte>() + i * image_bytes});
      max_rank = std::max(max_rank, item.rank);
    }
    if (options_.reconstruct_with_cublas) {
      context->scratch.grow_to(shape.values() * sizeof(float));
      reconstruct_with_cublas(context->cublas.value(), tasks, shape, pixels,
                              context->scratch.as<float>(), stream);
    } else {
      const std::size_t table_bytes = tasks.size() * sizeof(ReconstructTask);
      context->staging_in.grow_to(table_bytes);
      context->input.grow_to(table_bytes);
      std::memcpy(context->staging_in.data(), tasks.data(), table_bytes);
      SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(context->input.data(), context->staging_in.data(),
                                          table_bytes, cudaMemcpyHostToDevice, stream.value()));
      trace::ScopedRange stage("reconstruct_kernel");
      launch_fused_reconstruct(context->input.as<ReconstructTask>(),
                               static_cast<uint32_t>(tasks.size()), shape, pixels, max_rank,
                               stream);
    }
    const std::size_t output_bytes = group.size() * image_bytes;
    context->staging_out.grow_to(output_bytes);
    {
      trace::ScopedRange stage("d2h");
      SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(context->staging_out.data(), context->output.data(),
                                          output_bytes, cudaMemcpyDeviceToHost, stream.value()));
      stream.synchronize();
    }
    for (std::size_t i = 0; i < group.size(); ++i) {
      std::memcpy(group[i]->output.data(), context->staging_out.as<std::byte>() + i * image_bytes,
                  image_bytes);
    }
  }

  GpuBackendOptions options_;
  StreamPool streams_;
  std::size_t budget_bytes_ = 0;
  std::size_t total_bytes_ = 0;
  std::atomic<uint64_t> svd_matrices_{0};
  std::atomic<uint64_t> svd_matrices_redone_{0};
  mutable std::mutex identity_mutex_;
  double identity_range_[2] = {1e300, 0.0};  // guarded by identity_mutex_
  std::unique_ptr<DeviceMemoryPool> pool_;
  std::string description_;
};

}  // namespace

std::unique_ptr<Backend> make_gpu_backend(const GpuBackendOptions& options) {
  if (!cuda_device_available()) {
    throw FailedPrecondition("no CUDA device is usable (no driver, no GPU, or not visible)");
  }
  return std::make_unique<GpuBackend>(options);
}

}  // namespace svdserve::gpu
