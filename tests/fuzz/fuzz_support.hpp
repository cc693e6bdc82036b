#pragma once
// What every fuzz target shares: an expected refusal is one of svdserve's typed errors (the
// service turns each into a gRPC status); anything else escaping is a bug, and libFuzzer reports
// the abort with the input that caused it.

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/errors.hpp"

namespace svdserve::fuzz {

[[nodiscard]] inline std::span<const std::byte> bytes_of(const uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size};
}

// Runs `work`; a typed svdserve error is an answer, not a finding.
template <typename Work>
void expect_answer_or_typed_error(Work&& work) {
  try {
    work();
  } catch (const Error&) {
  }
}

}  // namespace svdserve::fuzz
