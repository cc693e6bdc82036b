#include "server/backend_selection.hpp"

#include "kernels/errors.hpp"
#include "server/logging.hpp"

namespace svdserve {
namespace {

constexpr std::size_t kCpuDefaultBudgetBytes = std::size_t{1} << 30;

}  // namespace

std::unique_ptr<Backend> make_backend(const v1::ServerConfig& config) {
  if (config.backend() == v1::BACKEND_KIND_GPU) {
    throw FailedPrecondition(
        "backend GPU was asked for, but this build has no GPU backend; use --backend cpu");
  }
  if (config.backend() == v1::BACKEND_KIND_AUTO) {
    log().info("backend=cpu reason=\"no GPU backend in this build\"");
  }
  return make_cpu_backend(config.worker_threads());
}

std::size_t memory_budget_bytes(const v1::ServerConfig& config, const Backend&) {
  return config.memory_budget_bytes() != 0 ? config.memory_budget_bytes() : kCpuDefaultBudgetBytes;
}

}  // namespace svdserve
