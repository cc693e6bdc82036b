#pragma once
// What a call threw, as the kind and message of a svdserve::Error: for tests of units that
// refuse by throwing.

#include <gtest/gtest.h>

#include <string>

#include "kernels/errors.hpp"

namespace svdserve::test {

struct Thrown {
  ErrorKind kind;
  std::string message;
};

// What `call` threw; fails the test when it threw no svdserve::Error.
template <typename Call>
Thrown error_of(Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  }
  ADD_FAILURE() << "nothing was thrown";
  return {ErrorKind::internal, ""};
}

}  // namespace svdserve::test
