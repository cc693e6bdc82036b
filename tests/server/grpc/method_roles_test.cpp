#include "server/grpc/method_roles.hpp"

#include <gtest/gtest.h>

#include "svdserve/v1/svdserve.pb.h"

namespace svdserve {
namespace {

// Every RPC of the service has a role: a new RPC without one fails here, and is refused to
// every token until it gets one.
TEST(MethodRoles, EveryMethodOfTheServiceHasARole) {
  const google::protobuf::ServiceDescriptor* service =
      v1::ReconstructRequest::descriptor()->file()->FindServiceByName("SvdServe");
  ASSERT_NE(service, nullptr);
  ASSERT_GT(service->method_count(), 0);
  for (int i = 0; i < service->method_count(); ++i) {
    EXPECT_TRUE(required_role(service->method(i)->name()).has_value())
        << service->method(i)->name() << " has no role in method_roles.cpp";
  }
}

TEST(MethodRoles, AreTheIssuesTable) {
  for (const char* method : {"Reconstruct", "ReconstructBatch", "ReconstructStream",
                             "ReconstructProgressive", "GetImage", "ListImages",
                             "GetServerInfo", "GetStats"}) {
    EXPECT_EQ(required_role(method), Role::read) << method;
  }
  for (const char* method : {"Decompose", "Compress", "DeleteImage"}) {
    EXPECT_EQ(required_role(method), Role::write) << method;
  }
  for (const char* method : {"LoadDirectory", "StartProfiling", "StopProfiling", "Echo"}) {
    EXPECT_EQ(required_role(method), Role::admin) << method;
  }
}

TEST(MethodRoles, AnUnknownMethodHasNone) {
  EXPECT_FALSE(required_role("Check").has_value());
  EXPECT_FALSE(required_role("decompose").has_value());
  EXPECT_FALSE(required_role("").has_value());
}

}  // namespace
}  // namespace svdserve
