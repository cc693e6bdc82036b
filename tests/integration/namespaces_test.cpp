// Tokens bound to a namespace on the real svdserve binary: two tenants may use the same id,
// each sees, reconstructs and deletes only its own images, under the ids it chose, and never
// learns the other's; a token without a namespace sees every id as stored.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "process.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"
#include "tests/client/temp_folder.hpp"
#include "tests/test_paths.hpp"
#include "token_file.hpp"

namespace svdserve::testing {
namespace {

using grpc::StatusCode;

constexpr uint32_t kMaxRank = 8;

// Every id of every page, following next_page_token, `page_size` at a time.
std::vector<std::string> listed_ids(const Client& client, uint32_t page_size = 0) {
  std::vector<std::string> ids;
  std::string token;
  do {
    const auto page = client.list_images(/*include_evicted=*/true, page_size, token);
    EXPECT_TRUE(page.ok()) << page.status().error_message();
    if (!page.ok()) break;
    for (const auto& image : page->images()) ids.push_back(image.id());
    token = page->next_page_token();
  } while (!token.empty());
  return ids;
}

using Ids = std::vector<std::string>;

class NamespacesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    token_file_.write({token_line(tenant_a_token_, "write", "tenant_a", "tenant-a/"),
                       token_line(tenant_b_token_, "write", "tenant_b", "tenant-b/"),
                       token_line(admin_token_, "admin", "ops")});
    server_ = std::make_unique<ServerProcess>(
        std::vector<std::string>{"--token-file", token_file_.path(), "--log-level", "debug"});
    ASSERT_TRUE(server_->serving());
    tenant_a_ = client_with_token(*server_, tenant_a_token_);
    tenant_b_ = client_with_token(*server_, tenant_b_token_);
    admin_ = client_with_token(*server_, admin_token_);
  }

  // NOT_FOUND, the message naming the id as the caller (of namespace `prefix`) gave it and
  // never as it is stored.
  static void expect_not_found_naming(const grpc::Status& status, const std::string& id,
                                      const std::string& prefix) {
    EXPECT_EQ(status.error_code(), StatusCode::NOT_FOUND) << status.error_message();
    EXPECT_NE(status.error_message().find("'" + id + "'"), std::string::npos)
        << status.error_message();
    EXPECT_EQ(status.error_message().find(prefix + id), std::string::npos)
        << status.error_message();
  }

  const std::string tenant_a_token_ = new_bearer_token();
  const std::string tenant_b_token_ = new_bearer_token();
  const std::string admin_token_ = new_bearer_token();
  // Two real images of different shapes, so that an answer says whose image it was.
  const std::string image_a_ = read_test_image("pic1.png");      // 400x300
  const std::string image_b_ = read_test_image("gradient.png");  // 300x300
  TestTokenFile token_file_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> tenant_a_;
  std::unique_ptr<Client> tenant_b_;
  std::unique_ptr<Client> admin_;
};

TEST_F(NamespacesTest, TwoTenantsCannotSeeReconstructOrDeleteEachOthersImages) {
  const auto a = tenant_a_->decompose(image_a_, kMaxRank, "cat");
  ASSERT_TRUE(a.ok()) << a.status().error_message();
  EXPECT_EQ(a->id(), "cat");
  const auto b = tenant_b_->decompose(image_b_, kMaxRank, "cat");
  ASSERT_TRUE(b.ok()) << b.status().error_message();
  EXPECT_EQ(b->id(), "cat");
  ASSERT_TRUE(tenant_a_->decompose(image_a_, kMaxRank, "dog").ok());

  // Each reconstructs its own "cat", under the id it chose, by every reconstruct RPC.
  const auto a_cat = tenant_a_->reconstruct("cat", Rank{2});
  ASSERT_TRUE(a_cat.ok()) << a_cat.status().error_message();
  EXPECT_EQ(a_cat->id(), "cat");
  EXPECT_EQ(a_cat->shape().width(), 400U);
  const auto b_cat = tenant_b_->reconstruct("cat", Rank{2});
  ASSERT_TRUE(b_cat.ok()) << b_cat.status().error_message();
  EXPECT_EQ(b_cat->shape().width(), 300U);
  v1::ReconstructRequest request;
  request.set_id("cat");
  request.set_rank(1);
  v1::ReconstructBatchRequest batch;
  *batch.add_items() = request;
  const auto batched = tenant_b_->reconstruct_batch(batch);
  ASSERT_TRUE(batched.ok());
  EXPECT_EQ(batched->items(0).result().shape().width(), 300U);
  EXPECT_EQ(batched->items(0).result().id(), "cat");
  const std::vector<v1::ReconstructRequest> stream_requests{request};
  const auto streamed = tenant_a_->reconstruct_stream(stream_requests);
  ASSERT_TRUE(streamed.ok());
  EXPECT_EQ(streamed->at(0).result().shape().width(), 400U);
  v1::ReconstructProgressiveRequest progressive;
  progressive.set_id("cat");
  progressive.add_ranks(1);
  const auto ranks = tenant_b_->reconstruct_progressive(progressive);
  ASSERT_TRUE(ranks.ok());
  EXPECT_EQ(ranks->at(0).shape().width(), 300U);

  // Listing: each its own ids, without the prefix; pages of one go on within its namespace.
  EXPECT_EQ(listed_ids(*tenant_a_), (Ids{"cat", "dog"}));
  EXPECT_EQ(listed_ids(*tenant_a_, 1), (Ids{"cat", "dog"}));
  EXPECT_EQ(listed_ids(*tenant_b_), (Ids{"cat"}));
  EXPECT_EQ(listed_ids(*tenant_b_, 1), (Ids{"cat"}));
  // A token without a namespace sees the ids as stored.
  EXPECT_EQ(listed_ids(*admin_), (Ids{"tenant-a/cat", "tenant-a/dog", "tenant-b/cat"}));
  const auto info = tenant_a_->get_image("dog");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->info().id(), "dog");

  // The other tenant's raw, prefixed ids name nothing: not found, as any unknown id.
  expect_not_found_naming(tenant_a_->get_image("tenant-b/cat").status(), "tenant-b/cat",
                          "tenant-a/");
  expect_not_found_naming(tenant_a_->reconstruct("tenant-b/cat", Rank{1}).status(),
                          "tenant-b/cat", "tenant-a/");
  expect_not_found_naming(tenant_a_->delete_image("tenant-b/cat").status(), "tenant-b/cat",
                          "tenant-a/");
  v1::ReconstructBatchRequest foreign;
  foreign.add_items()->set_id("tenant-b/cat");
  foreign.mutable_items(0)->set_rank(1);
  const auto foreign_batch = tenant_a_->reconstruct_batch(foreign);
  ASSERT_TRUE(foreign_batch.ok());
  expect_not_found_naming(item_status(foreign_batch->items(0).status()), "tenant-b/cat",
                          "tenant-a/");
  expect_not_found_naming(tenant_b_->get_image("dog").status(), "dog", "tenant-b/");
  expect_not_found_naming(tenant_b_->reconstruct("dog", Rank{1}).status(), "dog", "tenant-b/");

  // Deleting its own "cat" leaves the other tenant's.
  const auto deleted = tenant_a_->delete_image("cat");
  ASSERT_TRUE(deleted.ok()) << deleted.status().error_message();
  EXPECT_GT(deleted->bytes_freed(), 0U);
  expect_not_found_naming(tenant_a_->reconstruct("cat", Rank{1}).status(), "cat", "tenant-a/");
  EXPECT_TRUE(tenant_b_->reconstruct("cat", Rank{1}).ok());
  EXPECT_EQ(listed_ids(*admin_), (Ids{"tenant-a/dog", "tenant-b/cat"}));

  tenant_a_.reset();  // a connection left open holds the drain until its timeout
  tenant_b_.reset();
  admin_.reset();
  const ProcessResult stopped = server_->stop();
  const std::string log = stopped.err + stopped.out;
  for (const std::string* token : {&tenant_a_token_, &tenant_b_token_, &admin_token_}) {
    EXPECT_EQ(log.find(*token), std::string::npos);
  }
  // The audit names the tenant's id and the token's name.
  EXPECT_NE(log.find("token=tenant_a method=DeleteImage id=cat"), std::string::npos);
}

TEST_F(NamespacesTest, IdsTheServerNamesStayInTheNamespace) {
  const auto named = tenant_a_->decompose(image_a_, kMaxRank);
  ASSERT_TRUE(named.ok()) << named.status().error_message();
  EXPECT_TRUE(named->id().starts_with("img-")) << named->id();
  EXPECT_TRUE(tenant_a_->reconstruct(named->id(), Rank{1}).ok());
  expect_not_found_naming(tenant_b_->reconstruct(named->id(), Rank{1}).status(), named->id(),
                          "tenant-b/");
  EXPECT_EQ(listed_ids(*admin_), (Ids{"tenant-a/" + named->id()}));
}

// LoadDirectory by an admin token with a namespace: the files below the load root are stored in
// its namespace and answered, listed and reconstructed by their paths below the root.
TEST(NamespacedLoadDirectory, StoresTheFilesInTheCallersNamespace) {
  namespace fs = std::filesystem;
  TempFolder folder("svdserve_namespaced_load");
  const fs::path root = fs::canonical(folder.path());
  fs::create_directory(root / "sub");
  fs::copy_file(fs::path(svdserve::test::test_images_dir()) / "pic1.png", root / "sub" / "a.png");
  const std::string tenant_token = new_bearer_token();
  const std::string admin_token = new_bearer_token();
  TestTokenFile token_file;
  token_file.write({token_line(tenant_token, "admin", "tenant_ops", "tenant-a/"),
                    token_line(admin_token, "admin", "ops")});
  ServerProcess server(std::vector<std::string>{"--token-file", token_file.path(), "--load-root",
                                                root.string()});
  ASSERT_TRUE(server.serving());
  auto tenant = client_with_token(server, tenant_token);
  auto admin = client_with_token(server, admin_token);

  const auto loaded = tenant->load_directory(root.string(), kMaxRank, /*recursive=*/true);
  ASSERT_TRUE(loaded.ok()) << loaded.status().error_message();
  EXPECT_EQ(loaded->loaded(), 1U);
  ASSERT_EQ(loaded->results_size(), 1);
  EXPECT_EQ(loaded->results(0).id(), "sub/a.png");
  EXPECT_EQ(listed_ids(*tenant), (Ids{"sub/a.png"}));
  EXPECT_TRUE(tenant->reconstruct("sub/a.png", Rank{1}).ok());
  EXPECT_EQ(listed_ids(*admin), (Ids{"tenant-a/sub/a.png"}));
  tenant.reset();  // a connection left open holds the drain until its timeout
  admin.reset();
}

}  // namespace
}  // namespace svdserve::testing
