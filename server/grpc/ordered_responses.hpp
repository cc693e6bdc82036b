#pragma once
// Streaming responses complete out of order (batches on different workers) but must be written
// in request order, with at most one write in flight (a gRPC rule). This keeps that bookkeeping;
// the caller holds its own mutex around every call.

#include <cstdint>
#include <map>
#include <utility>

namespace svdserve {

template <typename Response>
class OrderedResponses {
 public:
  // Sequence number for the next request.
  [[nodiscard]] uint64_t reserve() noexcept {
    ++outstanding_;
    return next_sequence_++;
  }

  // A result arrived. Returns the response to write now, or nullptr if a write is in flight or an
  // earlier result is still missing. The pointer stays valid until written().
  [[nodiscard]] Response* deliver(uint64_t sequence, Response response) {
    --outstanding_;
    ready_.emplace(sequence, std::move(response));
    return next_to_write();
  }

  // The write in flight finished. Returns the next response to write, or nullptr.
  [[nodiscard]] Response* written() {
    ready_.erase(next_write_++);
    write_in_flight_ = false;
    return next_to_write();
  }

  // Nothing outstanding, nothing waiting, nothing being written.
  [[nodiscard]] bool idle() const noexcept {
    return outstanding_ == 0 && ready_.empty() && !write_in_flight_;
  }
  // Results not yet delivered.
  [[nodiscard]] uint64_t outstanding() const noexcept { return outstanding_; }
  // Reserved and not yet written: the answers the stream holds (computing, waiting, or being
  // written).
  [[nodiscard]] uint64_t unwritten() const noexcept { return next_sequence_ - next_write_; }

 private:
  Response* next_to_write() {
    if (write_in_flight_) return nullptr;
    auto it = ready_.find(next_write_);
    if (it == ready_.end()) return nullptr;
    write_in_flight_ = true;
    return &it->second;
  }

  uint64_t next_sequence_ = 0;
  uint64_t next_write_ = 0;
  uint64_t outstanding_ = 0;
  bool write_in_flight_ = false;
  std::map<uint64_t, Response> ready_;
};

}  // namespace svdserve
