#include "server/grpc/image_namespace.hpp"

#include <gtest/gtest.h>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

// What an exception_ptr holds: its kind and message.
std::pair<ErrorKind, std::string> contents(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  }
}

TEST(ImageNamespace, PrefixesAndStripsIds) {
  const ImageNamespace tenant("tenant-a/");
  EXPECT_EQ(tenant.stored_id("cat"), "tenant-a/cat");
  EXPECT_EQ(tenant.client_id("tenant-a/cat"), "cat");
  EXPECT_EQ(tenant.client_id(""), "");  // an empty page token stays empty
  // Another tenant's id, as a client could name it, is stored under this one's prefix.
  EXPECT_EQ(tenant.stored_id("tenant-b/cat"), "tenant-a/tenant-b/cat");
}

TEST(ImageNamespace, WithoutAPrefixIdsAreAsStored) {
  const ImageNamespace everything;
  EXPECT_EQ(everything.stored_id("tenant-a/cat"), "tenant-a/cat");
  EXPECT_EQ(everything.client_id("tenant-a/cat"), "tenant-a/cat");
}

TEST(ImageNamespace, ErrorsNameTheClientsIdOnly) {
  const ImageNamespace tenant("tenant-a/");
  const auto [kind, message] = contents(tenant.in_client_terms(
      std::make_exception_ptr(NotFound("no image with id 'tenant-a/cat'; decompose it first")),
      "cat"));
  EXPECT_EQ(kind, ErrorKind::not_found);
  EXPECT_EQ(message, "no image with id 'cat'; decompose it first");

  const auto [kind2, message2] = contents(tenant.in_client_terms(
      std::make_exception_ptr(ResourceExhausted("image 'tenant-a/cat' needs 10 bytes; "
                                                "'tenant-a/cat' is too large")),
      "cat"));
  EXPECT_EQ(kind2, ErrorKind::resource_exhausted);
  EXPECT_EQ(message2, "image 'cat' needs 10 bytes; 'cat' is too large");
}

TEST(ImageNamespace, OtherErrorsPassAsTheyAre) {
  const ImageNamespace tenant("tenant-a/");
  EXPECT_EQ(tenant.in_client_terms(nullptr, "cat"), nullptr);
  const auto untyped = std::make_exception_ptr(std::runtime_error("library words"));
  EXPECT_EQ(tenant.in_client_terms(untyped, "cat"), untyped);
  const auto unscoped = std::make_exception_ptr(NotFound("no image with id 'cat'"));
  EXPECT_EQ(ImageNamespace().in_client_terms(unscoped, "cat"), unscoped);
}

}  // namespace
}  // namespace svdserve
