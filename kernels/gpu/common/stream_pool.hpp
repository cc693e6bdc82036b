#pragma once
// A fixed set of streams, each with everything one batch needs: its own cuBLAS and cuSOLVER
// handles bound to it, solver workspaces, device buffers and pinned staging buffers. A worker
// leases a whole context for one batch, so batches on different contexts overlap on the GPU.
// Buffers grow on first use of a larger shape and are then reused: no allocation per request.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/svd/solver.hpp"

namespace svdserve::gpu {

struct StreamContext {
  StreamContext(int index, int device);  // names the stream after both, for Nsight Systems

  int index;
  Stream stream;
  CublasHandle cublas;
  CusolverHandle cusolver;
  GpuSvdSolver solver;
  Event completed{false, true};  // recorded after a batch's last copy; waited on by a completion thread
  PinnedBuffer staging_in;
  PinnedBuffer staging_out;
  DeviceBuffer input;       // decompose: decoded samples; reconstruct: task table
  DeviceBuffer matrices;    // decompose: f32 matrices in the solver's layout
  DeviceBuffer norms;       // decompose: ||A||_F^2 per matrix (double)
  DeviceBuffer u;
  DeviceBuffer s;
  DeviceBuffer v;
  DeviceBuffer output;      // reconstruct: pixels of the whole batch
  std::atomic<int64_t> busy_ns{0};  // time leased to batches (host view: enqueue to sync)
};

class StreamPool {
 public:
  // Movable, so that a batch's completion task can hold the stream until its outputs are out.
  class Lease {
   public:
    Lease(StreamPool& pool, StreamContext& context)
        : pool_(&pool), context_(&context), start_(std::chrono::steady_clock::now()) {}
    Lease(Lease&& other) noexcept
        : pool_(other.pool_), context_(std::exchange(other.context_, nullptr)),
          start_(other.start_) {}
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() {
      if (context_ == nullptr) return;
      context_->busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now() - start_)
                               .count();
      pool_->give_back(*context_);
    }
    StreamContext* operator->() const noexcept { return context_; }
    StreamContext& operator*() const noexcept { return *context_; }

   private:
    StreamPool* pool_;
    StreamContext* context_;
    std::chrono::steady_clock::time_point start_;
  };

  StreamPool(unsigned size, int device);  // on the current device, which is `device`
  // Waits until a context is free.
  [[nodiscard]] Lease acquire();
  [[nodiscard]] std::size_t size() const noexcept { return contexts_.size(); }
  [[nodiscard]] std::vector<double> busy_seconds() const;

 private:
  void give_back(StreamContext& context);

  std::vector<std::unique_ptr<StreamContext>> contexts_;
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<StreamContext*> free_;  // guarded by mutex_
};

}  // namespace svdserve::gpu
