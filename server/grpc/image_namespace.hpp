#pragma once
// The image ids one caller sees. A token bound to a namespace (an id prefix, "tenant-a/") stores
// its images under that prefix and sees them without it: its client id X is the store's id
// prefix+X, so two tenants may both call an image "cat" and neither can name the other's. The
// empty prefix (no namespace, or no authentication) sees every id as it is stored.

#include <exception>
#include <string>
#include <string_view>

namespace svdserve {

class ImageNamespace {
 public:
  ImageNamespace() = default;
  explicit ImageNamespace(std::string prefix) : prefix_(std::move(prefix)) {}

  [[nodiscard]] const std::string& prefix() const noexcept { return prefix_; }

  // The store's id for the client's id.
  [[nodiscard]] std::string stored_id(std::string_view client_id) const;
  // The client's id for a store id under the prefix.
  [[nodiscard]] std::string_view client_id(std::string_view stored_id) const noexcept;

  // An error about the image stored as stored_id(client_id), in the client's terms: a
  // svdserve::Error of the same kind whose message names client_id instead. Other errors, and
  // every error without a prefix, are returned as they are.
  [[nodiscard]] std::exception_ptr in_client_terms(std::exception_ptr error,
                                                   std::string_view client_id) const;

 private:
  std::string prefix_;
};

}  // namespace svdserve
