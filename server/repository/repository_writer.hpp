#pragma once
// The threads that write to and delete from the repository. An id always goes to the same lane,
// so one image's writes and deletes happen in the order they were asked for (a delete never
// overtakes the write of the image it deletes). Each lane's queue is bounded: a full lane makes
// the caller wait, which is the back-pressure async durability needs.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/runtime/bounded_queue.hpp"

namespace svdserve {

class RepositoryWriter {
 public:
  RepositoryWriter(unsigned lanes, std::size_t capacity);
  ~RepositoryWriter();  // close()
  RepositoryWriter(const RepositoryWriter&) = delete;
  RepositoryWriter& operator=(const RepositoryWriter&) = delete;

  // Runs `task` on id's lane after what is queued there; waits for room. After close(), runs it
  // on the calling thread (nothing is dropped).
  void submit(const std::string& id, std::function<void()> task);

  // Runs what is queued, then joins the lanes. Idempotent.
  void close();

  [[nodiscard]] std::size_t queued() const;

 private:
  struct Lane {
    explicit Lane(std::size_t capacity) : queue(capacity) {}
    BoundedQueue<std::function<void()>> queue;
    std::jthread thread;
  };
  std::vector<std::unique_ptr<Lane>> lanes_;
};

}  // namespace svdserve
