#include "server/grpc/status_mapping.hpp"

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

struct KindCase {
  ErrorKind kind;
  grpc::StatusCode code;
};

class StatusMappingKind : public ::testing::TestWithParam<KindCase> {};

TEST_P(StatusMappingKind, MapsToItsCodeAndKeepsTheMessage) {
  const std::string message = "image 'cat' needs attention: 12 bytes";
  const grpc::Status status = to_status(std::make_exception_ptr(Error(GetParam().kind, message)));
  EXPECT_EQ(status.error_code(), GetParam().code) << code_name(status.error_code());
  EXPECT_EQ(status.error_message(), message);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, StatusMappingKind,
    ::testing::Values(KindCase{ErrorKind::invalid_argument, grpc::StatusCode::INVALID_ARGUMENT},
                      KindCase{ErrorKind::not_found, grpc::StatusCode::NOT_FOUND},
                      KindCase{ErrorKind::permission_denied, grpc::StatusCode::PERMISSION_DENIED},
                      KindCase{ErrorKind::resource_exhausted, grpc::StatusCode::RESOURCE_EXHAUSTED},
                      KindCase{ErrorKind::failed_precondition,
                               grpc::StatusCode::FAILED_PRECONDITION},
                      KindCase{ErrorKind::unavailable, grpc::StatusCode::UNAVAILABLE},
                      KindCase{ErrorKind::deadline_exceeded, grpc::StatusCode::DEADLINE_EXCEEDED},
                      KindCase{ErrorKind::cancelled, grpc::StatusCode::CANCELLED},
                      KindCase{ErrorKind::internal, grpc::StatusCode::INTERNAL},
                      KindCase{ErrorKind::unauthenticated, grpc::StatusCode::UNAUTHENTICATED}),
    [](const auto& test_info) { return code_name(test_info.param.code); });

TEST(StatusMapping, ADeviceFailureIsUnavailableWithoutItsCudaCall) {
  const grpc::Status status = to_status(std::make_exception_ptr(
      DeviceFailure("CUDA error cudaErrorIllegalAddress in cudaMemcpyAsync at kernels/gpu/x.cpp:9")));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(status.error_message(), "a GPU of the server failed; retry");
}

TEST(StatusMapping, TypedErrorsMapThroughTheirBaseClass) {
  EXPECT_EQ(to_status(std::make_exception_ptr(InvalidArgument("x"))).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(to_status(std::make_exception_ptr(NotFound("x"))).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(to_status(std::make_exception_ptr(PermissionDenied("x"))).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(to_status(std::make_exception_ptr(ResourceExhausted("x"))).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(to_status(std::make_exception_ptr(Unavailable("x"))).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(to_status(std::make_exception_ptr(InternalError("x"))).error_code(),
            grpc::StatusCode::INTERNAL);
  EXPECT_EQ(to_status(std::make_exception_ptr(Unauthenticated("x"))).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST(StatusMapping, NoErrorIsOk) {
  const grpc::Status status = to_status(nullptr);
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::OK);
}

TEST(StatusMapping, BadAllocIsResourceExhausted) {
  const grpc::Status status = to_status(std::make_exception_ptr(std::bad_alloc()));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(status.error_message().find("memory"), std::string::npos) << status.error_message();
}

TEST(StatusMapping, OtherExceptionsAreInternalWithoutTheLibrarysWords) {
  // What a library throws names its internals (OpenCV: its source paths): logged, not answered.
  const grpc::Status status = to_status(std::make_exception_ptr(std::runtime_error(
      "OpenCV(4.6.0) /build/opencv/modules/imgcodecs/src/loadsave.cpp:1014: error: (-2) x")));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_NE(status.error_message().find("internal error"), std::string::npos)
      << status.error_message();
  EXPECT_EQ(status.error_message().find("loadsave.cpp"), std::string::npos)
      << status.error_message();
  EXPECT_EQ(status.error_message().find("/build"), std::string::npos) << status.error_message();
}

TEST(StatusMapping, NonStandardExceptionsAreInternal) {
  const grpc::Status status = to_status(std::make_exception_ptr(42));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_FALSE(status.error_message().empty());
}

TEST(StatusMapping, LongMessagesAreCutToFitTheTrailers) {
  // gRPC refuses trailers over its metadata limit (8 KiB by default): a message that carried a
  // client's 10 KiB of text would turn the answer into a transport error.
  const grpc::Status status =
      to_status(std::make_exception_ptr(NotFound("no such '" + std::string(10240, 'x') + "'")));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_LE(status.error_message().size(), 1024U);
  EXPECT_TRUE(status.error_message().starts_with("no such 'xxx"));
  EXPECT_TRUE(status.error_message().ends_with("…")) << status.error_message().substr(1000);
}

// The shared table (svdserve/status_code_names.hpp): GetStats reports codes by these names.
TEST(StatusMapping, CodeNamesAreGrpcsSpelling) {
  EXPECT_EQ(code_name(grpc::StatusCode::OK), "OK");
  EXPECT_EQ(code_name(grpc::StatusCode::INVALID_ARGUMENT), "INVALID_ARGUMENT");
  EXPECT_EQ(code_name(grpc::StatusCode::RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(code_name(grpc::StatusCode::UNAUTHENTICATED), "UNAUTHENTICATED");
  EXPECT_EQ(code_name(static_cast<grpc::StatusCode>(99)), "CODE_99");
}

}  // namespace
}  // namespace svdserve
