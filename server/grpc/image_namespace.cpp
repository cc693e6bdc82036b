#include "server/grpc/image_namespace.hpp"

#include "kernels/errors.hpp"

namespace svdserve {

std::string ImageNamespace::stored_id(std::string_view client_id) const {
  std::string id = prefix_;
  id += client_id;
  return id;
}

std::string_view ImageNamespace::client_id(std::string_view stored_id) const noexcept {
  return stored_id.starts_with(prefix_) ? stored_id.substr(prefix_.size()) : stored_id;
}

std::exception_ptr ImageNamespace::in_client_terms(std::exception_ptr error,
                                                   std::string_view client_id) const {
  if (!error || prefix_.empty()) return error;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    const std::string stored = stored_id(client_id);
    std::string message = e.what();
    for (std::size_t at = message.find(stored); at != std::string::npos;
         at = message.find(stored, at + client_id.size())) {
      message.replace(at, stored.size(), client_id);
    }
    return std::make_exception_ptr(Error(e.kind(), message));
  } catch (...) {
    return error;
  }
}

}  // namespace svdserve
