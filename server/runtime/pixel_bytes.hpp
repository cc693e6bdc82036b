#pragma once
// A finished job's pixels: pool memory (raw outputs bound for the zero-copy Reconstruct path,
// which hands the buffer itself to gRPC) or a string (PNG, and the outputs of the RPCs that
// answer with a protobuf message, which takes the string without copying it). Move-only.

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <variant>

#include "server/runtime/host_buffer_pool.hpp"

namespace svdserve {

class PixelBytes {
 public:
  PixelBytes() = default;
  explicit PixelBytes(std::string bytes) : storage_(std::move(bytes)) {}
  explicit PixelBytes(HostBuffer bytes) : storage_(std::move(bytes)) {}

  [[nodiscard]] const std::byte* data() const noexcept;
  [[nodiscard]] std::byte* data() noexcept {
    return const_cast<std::byte*>(std::as_const(*this).data());
  }
  [[nodiscard]] std::size_t size() const noexcept;
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return {data(), size()}; }
  [[nodiscard]] std::span<std::byte> writable() noexcept { return {data(), size()}; }
  [[nodiscard]] bool in_pool_memory() const noexcept {
    return std::holds_alternative<HostBuffer>(storage_);
  }

  // The bytes as a string, for a protobuf field: a string moves out, pool memory is copied (and
  // goes back to the pool). Leaves this empty.
  [[nodiscard]] std::string take_string();

 private:
  std::variant<std::string, HostBuffer> storage_;
};

}  // namespace svdserve
