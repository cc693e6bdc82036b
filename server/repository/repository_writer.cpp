#include "server/repository/repository_writer.hpp"

#include <algorithm>

namespace svdserve {

RepositoryWriter::RepositoryWriter(unsigned lanes, std::size_t capacity) {
  const std::size_t per_lane = std::max<std::size_t>(1, capacity / std::max(1u, lanes));
  for (unsigned i = 0; i < std::max(1u, lanes); ++i) {
    auto lane = std::make_unique<Lane>(per_lane);
    lane->thread = std::jthread([queue = &lane->queue] {
      while (auto task = queue->pop()) (*task)();
    });
    lanes_.push_back(std::move(lane));
  }
}

RepositoryWriter::~RepositoryWriter() { close(); }

void RepositoryWriter::submit(const std::string& id, std::function<void()> task) {
  Lane& lane = *lanes_[std::hash<std::string>{}(id) % lanes_.size()];
  if (lane.queue.push(task) == PushResult::closed) task();
}

void RepositoryWriter::close() {
  for (auto& lane : lanes_) lane->queue.close();
  for (auto& lane : lanes_) {
    if (lane->thread.joinable()) lane->thread.join();
  }
}

std::size_t RepositoryWriter::queued() const {
  std::size_t total = 0;
  for (const auto& lane : lanes_) total += lane->queue.size();
  return total;
}

}  // namespace svdserve
