#pragma once
// The bytes of responses made and not yet sent, of all calls together, held to one server-wide
// budget. A call reserves an answer's bytes before the answer is computed and gives them back
// when gRPC has sent it (a stream's OnWriteDone, a unary call's OnDone). A call that cannot
// reserve waits in line, first come first served, holding its request but no answer, and starts
// when enough bytes come back. So a client that never reads holds only what it was granted, and
// no call is exempt: an answer larger than the whole budget passes only while nothing else is
// held, so that every call still makes progress.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <utility>
#include <variant>

namespace svdserve {

struct UnsentBytesSample {
  uint64_t held_bytes = 0;
  uint64_t budget_bytes = 0;
  uint64_t waiting_calls = 0;  // in line for bytes
};

class UnsentBytesBudget {
 public:
  // Bytes held for one answer, given back when destroyed. Move-only. Giving bytes back starts
  // the calls in line on the same thread, so destroy one only where no lock a call takes is held.
  class Reservation {
   public:
    Reservation() noexcept = default;
    Reservation(Reservation&& other) noexcept
        : budget_(std::exchange(other.budget_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
    Reservation& operator=(Reservation other) noexcept {  // gives back what this held
      std::swap(budget_, other.budget_);
      std::swap(bytes_, other.bytes_);
      return *this;
    }
    ~Reservation() { shrink_to(0); }

    [[nodiscard]] uint64_t bytes() const noexcept { return bytes_; }
    // Gives back what the answer turned out not to need (a PNG is smaller than its pixels).
    void shrink_to(uint64_t bytes) noexcept;

   private:
    friend class UnsentBytesBudget;
    Reservation(UnsentBytesBudget* budget, uint64_t bytes) noexcept
        : budget_(budget), bytes_(bytes) {}

    UnsentBytesBudget* budget_ = nullptr;
    uint64_t bytes_ = 0;
  };

  // Runs once a waiting call's bytes are reserved, on the thread that gave bytes back. Must not
  // throw.
  using Granted = std::function<void(Reservation)>;
  using Ticket = uint64_t;

  explicit UnsentBytesBudget(uint64_t budget_bytes) noexcept : budget_bytes_(budget_bytes) {}
  UnsentBytesBudget(const UnsentBytesBudget&) = delete;
  UnsentBytesBudget& operator=(const UnsentBytesBudget&) = delete;

  // The reservation, when the bytes fit now and nobody is in line; else a ticket, and `granted`
  // runs later.
  [[nodiscard]] std::variant<Reservation, Ticket> reserve(uint64_t bytes, Granted granted);
  // Takes a call out of line (it was cancelled). False when it was granted already: its
  // `granted` runs or ran.
  bool withdraw(Ticket ticket);

  [[nodiscard]] UnsentBytesSample sample() const;
  // Waits until `reached(sample())` holds, at most `timeout`; returns whether it did. For
  // observers (tests): calls never wait on the budget, they queue.
  [[nodiscard]] bool wait_until(const std::function<bool(const UnsentBytesSample&)>& reached,
                                std::chrono::milliseconds timeout) const;

 private:
  struct Waiter {
    Ticket ticket = 0;
    uint64_t bytes = 0;
    Granted granted;
  };
  struct Grant {
    Granted granted;
    Reservation reservation;
  };

  void release(uint64_t bytes) noexcept;
  [[nodiscard]] bool fits_locked(uint64_t bytes) const noexcept;
  // Reserves for the calls at the head of the line while they fit.
  void grant_locked(std::deque<Grant>& grants);
  static void run(std::deque<Grant> grants) noexcept;

  const uint64_t budget_bytes_;
  mutable std::mutex mutex_;
  uint64_t held_bytes_ = 0;       // guarded by mutex_
  std::deque<Waiter> waiting_;    // guarded by mutex_; front = first in line
  Ticket next_ticket_ = 1;        // guarded by mutex_
  mutable std::condition_variable changed_;  // with mutex_: wait_until
};

}  // namespace svdserve
