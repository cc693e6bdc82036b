#include "client/status_text.hpp"

#include <gtest/gtest.h>

#include "client/call_result.hpp"
#include "client/cli/report.hpp"
#include "client/client.hpp"
#include "svdserve/status_code_names.hpp"

namespace svdserve {
namespace {

TEST(StatusText, CodeNames) {
  EXPECT_EQ(status_code_name(grpc::StatusCode::OK), "OK");
  EXPECT_EQ(status_code_name(grpc::StatusCode::INVALID_ARGUMENT), "INVALID_ARGUMENT");
  EXPECT_EQ(status_code_name(grpc::StatusCode::UNAUTHENTICATED), "UNAUTHENTICATED");
  EXPECT_EQ(status_code_name(5), "NOT_FOUND");
  EXPECT_EQ(status_code_name(99), "CODE_99");
  EXPECT_EQ(status_code_name(-1), "CODE_-1");
  EXPECT_EQ(status_code_name(static_cast<grpc::StatusCode>(99)), "UNKNOWN");
}

// The shared table is indexed by gRPC's own enumerators: each name is its code's.
TEST(StatusText, SharedTableFollowsGrpcsCodes) {
  EXPECT_EQ(kStatusCodeNames.size(), static_cast<std::size_t>(grpc::StatusCode::UNAUTHENTICATED) + 1);
  EXPECT_EQ(kStatusCodeNames[grpc::StatusCode::CANCELLED], "CANCELLED");
  EXPECT_EQ(kStatusCodeNames[grpc::StatusCode::RESOURCE_EXHAUSTED], "RESOURCE_EXHAUSTED");
  EXPECT_EQ(kStatusCodeNames[grpc::StatusCode::DATA_LOSS], "DATA_LOSS");
  for (int code = 0; code < static_cast<int>(kStatusCodeNames.size()); ++code) {
    EXPECT_EQ(status_code_name(code), kStatusCodeNames[static_cast<std::size_t>(code)]);
    EXPECT_EQ(status_code_name(static_cast<grpc::StatusCode>(code)),
              kStatusCodeNames[static_cast<std::size_t>(code)]);
  }
}

TEST(StatusText, FormatAndExitCodes) {
  EXPECT_EQ(format_status(grpc::Status(grpc::StatusCode::NOT_FOUND, "no image 'x'")), "NOT_FOUND: no image 'x'");
  EXPECT_EQ(format_status(grpc::Status(grpc::StatusCode::INTERNAL, "")), "INTERNAL");
  EXPECT_EQ(exit_code_for(grpc::Status::OK), ExitCode::ok);
  EXPECT_EQ(exit_code_for(grpc::Status(grpc::StatusCode::NOT_FOUND, "")), ExitCode::failed);
  EXPECT_EQ(exit_code_for(grpc::Status(grpc::StatusCode::UNAVAILABLE, "")), ExitCode::unreachable);
  EXPECT_EQ(exit_code_for(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "")), ExitCode::unreachable);
}

TEST(CallResult, ValueOrStatus) {
  CallResult<int> good(7);
  EXPECT_TRUE(good.ok());
  EXPECT_TRUE(good.status().ok());
  EXPECT_EQ(*good, 7);

  CallResult<int> bad(grpc::Status(grpc::StatusCode::NOT_FOUND, "gone"));
  EXPECT_FALSE(bad);
  EXPECT_EQ(bad.status().error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THROW(static_cast<void>(bad.value()), BadCallResultAccess);

  CallResult<int> confused(grpc::Status::OK);  // OK without a value reads as a failure.
  EXPECT_FALSE(confused.ok());
  EXPECT_EQ(confused.status().error_code(), grpc::StatusCode::UNKNOWN);
}

TEST(ItemTally, ExitCodeOverItems) {
  {
    cli::ItemTally tally;
    tally.succeeded();
    EXPECT_EQ(tally.exit_code(), 0);
  }
  {
    cli::ItemTally tally;
    tally.failed(grpc::StatusCode::UNAVAILABLE);
    tally.failed(grpc::StatusCode::DEADLINE_EXCEEDED);
    EXPECT_EQ(tally.exit_code(), 3);  // Nothing answered.
    tally.succeeded();
    EXPECT_EQ(tally.exit_code(), 1);  // Some did.
  }
  {
    cli::ItemTally tally;
    tally.failed(grpc::StatusCode::UNAVAILABLE);
    tally.failed_locally();
    EXPECT_EQ(tally.exit_code(), 1);
  }
}

TEST(Rank, SetRankChoice) {
  v1::ReconstructRequest request;
  set_rank_choice(request, Rank{8});
  EXPECT_EQ(request.rank_choice_case(), v1::ReconstructRequest::kRank);
  EXPECT_EQ(request.rank(), 8u);
  set_rank_choice(request, EnergyFraction{0.9});
  EXPECT_EQ(request.rank_choice_case(), v1::ReconstructRequest::kEnergyFraction);
  EXPECT_DOUBLE_EQ(request.energy_fraction(), 0.9);
}

}  // namespace
}  // namespace svdserve
