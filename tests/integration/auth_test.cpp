// Bearer tokens and roles on the real svdserve binary: every RPC under no token, a wrong token
// and each role answers exactly its code; tokens added to and revoked from the file apply
// without a restart; health stays open; no token value reaches the server's log.

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "process.hpp"
#include "server/auth/role.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"
#include "tests/test_paths.hpp"
#include "token_file.hpp"

namespace svdserve::testing {
namespace {

namespace fs = std::filesystem;
using grpc::StatusCode;

constexpr auto kReload = std::chrono::seconds(10);  // what eventually() waits for a reload
constexpr uint32_t kMaxRank = 8;                     // small factors: decompositions are quick
const std::string kExisting = "existing.png";
const std::string kMissing = "missing.png";

enum class Credential { none, wrong, read, write, admin };
constexpr Credential kCredentials[] = {Credential::none, Credential::wrong, Credential::read,
                                       Credential::write, Credential::admin};

const char* name_of(Credential credential) {
  switch (credential) {
    case Credential::none: return "no token";
    case Credential::wrong: return "wrong token";
    case Credential::read: return "read";
    case Credential::write: return "write";
    case Credential::admin: return "admin";
  }
  return "?";
}

// One RPC of the service as the matrix calls it: about an existing or a missing id (for the
// RPCs without one, the same call twice), and the codes it answers when its role allows it.
struct Rpc {
  std::string method;
  Role role;
  StatusCode allowed_existing;
  StatusCode allowed_missing;
  std::function<grpc::Status(const Client&, bool existing)> call;
};

// The status of a call that answers items: the call's, else its first item's.
template <typename Result>
grpc::Status first_item(const Result& result) {
  if (!result.ok()) return result.status();
  return item_status(result->items(0).status());
}

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    image_ = read_test_image("pic1.png");
    fs::copy_file(fs::path(svdserve::test::test_images_dir()) / "pic1.png",
                  load_folder_.path() / "loaded.png");
    tokens_[Credential::wrong] = new_bearer_token();
    tokens_[Credential::read] = new_bearer_token();
    tokens_[Credential::write] = new_bearer_token();
    tokens_[Credential::admin] = new_bearer_token();
    token_file_.write({token_line(tokens_[Credential::read], "read", "reader"),
                       token_line(tokens_[Credential::write], "write", "writer"),
                       token_line(tokens_[Credential::admin], "admin", "ops")});
  }

  // The server with the token file and the load folder as LoadDirectory's root; at debug level,
  // so that no log line a token could reach is left out of the check that none does.
  void start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--token-file", token_file_.path(),
                                  "--token-reload-interval-ms", "50", "--log-level", "debug",
                                  "--load-root", load_root().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    server_ = std::make_unique<ServerProcess>(args);
    ASSERT_TRUE(server_->serving());
    for (Credential credential : kCredentials) {
      clients_[credential] = client_with_token(*server_, tokens_[credential]);
    }
  }

  // The load folder as a load root must name it: by its own path, with no link in it.
  [[nodiscard]] fs::path load_root() const { return fs::canonical(load_folder_.path()); }

  [[nodiscard]] const Client& client(Credential credential) const {
    return *clients_.at(credential);
  }

  // Stops the server and returns its log (stderr and stdout), checking that no token is in it.
  // The clients go first: a connection left open holds the drain until its timeout.
  std::string stopped_log() {
    clients_.clear();
    const ProcessResult result = server_->stop();
    EXPECT_EQ(result.exit_code, 0);
    const std::string log = result.err + result.out;
    for (const auto& [credential, token] : tokens_) {
      if (token.empty()) continue;
      EXPECT_EQ(log.find(token), std::string::npos) << "the " << name_of(credential) << " token";
    }
    for (const std::string& token : other_tokens_) {
      EXPECT_EQ(log.find(token), std::string::npos) << "a token added later";
    }
    return log;
  }

  void ensure_existing() const {
    if (client(Credential::admin).get_image(kExisting).ok()) return;
    const auto decomposed = client(Credential::admin).decompose(image_, kMaxRank, kExisting);
    ASSERT_TRUE(decomposed.ok()) << decomposed.status().error_message();
  }

  [[nodiscard]] std::vector<Rpc> rpcs() const {
    const auto reconstruct_request = [](bool existing) {
      v1::ReconstructRequest request;
      request.set_id(existing ? kExisting : kMissing);
      request.set_rank(2);
      return request;
    };
    return {
        {"Decompose", Role::write, StatusCode::OK, StatusCode::OK,
         [this](const Client& c, bool existing) {
           return c.decompose(image_, kMaxRank, existing ? kExisting : "decomposed.png").status();
         }},
        {"Reconstruct", Role::read, StatusCode::OK, StatusCode::NOT_FOUND,
         [](const Client& c, bool existing) {
           return c.reconstruct(existing ? kExisting : kMissing, Rank{2}).status();
         }},
        {"ReconstructBatch", Role::read, StatusCode::OK, StatusCode::NOT_FOUND,
         [=](const Client& c, bool existing) {
           v1::ReconstructBatchRequest request;
           *request.add_items() = reconstruct_request(existing);
           return first_item(c.reconstruct_batch(request));
         }},
        {"ReconstructStream", Role::read, StatusCode::OK, StatusCode::NOT_FOUND,
         [=](const Client& c, bool existing) {
           const std::vector<v1::ReconstructRequest> requests{reconstruct_request(existing)};
           const auto answers = c.reconstruct_stream(requests);
           if (!answers.ok()) return answers.status();
           return item_status(answers->at(0).status());
         }},
        {"ReconstructProgressive", Role::read, StatusCode::OK, StatusCode::NOT_FOUND,
         [](const Client& c, bool existing) {
           v1::ReconstructProgressiveRequest request;
           request.set_id(existing ? kExisting : kMissing);
           request.add_ranks(1);
           request.add_ranks(2);
           return c.reconstruct_progressive(request).status();
         }},
        {"Compress", Role::write, StatusCode::OK, StatusCode::OK,
         [this](const Client& c, bool) { return c.compress(image_, Rank{2}).status(); }},
        {"GetImage", Role::read, StatusCode::OK, StatusCode::NOT_FOUND,
         [](const Client& c, bool existing) {
           return c.get_image(existing ? kExisting : kMissing).status();
         }},
        {"ListImages", Role::read, StatusCode::OK, StatusCode::OK,
         [](const Client& c, bool) { return c.list_images().status(); }},
        {"DeleteImage", Role::write, StatusCode::OK, StatusCode::NOT_FOUND,
         [](const Client& c, bool existing) {
           return c.delete_image(existing ? kExisting : kMissing).status();
         }},
        {"LoadDirectory", Role::admin, StatusCode::OK, StatusCode::NOT_FOUND,
         [this](const Client& c, bool existing) {
           const fs::path folder = load_root() / (existing ? "" : "missing");
           return c.load_directory(folder.string(), kMaxRank).status();
         }},
        {"GetServerInfo", Role::read, StatusCode::OK, StatusCode::OK,
         [](const Client& c, bool) { return c.server_info().status(); }},
        {"GetStats", Role::read, StatusCode::OK, StatusCode::OK,
         [](const Client& c, bool) { return c.stats().status(); }},
        {"Echo", Role::admin, StatusCode::OK, StatusCode::OK,
         [](const Client& c, bool) {
           v1::EchoRequest request;
           request.set_payload("ping");
           request.set_response_bytes(16);
           return c.echo(request).status();
         }},
        // The CPU backend has no profiler: FAILED_PRECONDITION is its ordinary answer.
        {"StartProfiling", Role::admin, StatusCode::FAILED_PRECONDITION,
         StatusCode::FAILED_PRECONDITION,
         [](const Client& c, bool) { return c.start_profiling(); }},
        {"StopProfiling", Role::admin, StatusCode::FAILED_PRECONDITION,
         StatusCode::FAILED_PRECONDITION,
         [](const Client& c, bool) { return c.stop_profiling(); }},
    };
  }

  std::string image_;
  TempFolder load_folder_{"svdserve_auth_load"};
  TestTokenFile token_file_;
  std::map<Credential, std::string> tokens_{{Credential::none, ""}};
  std::vector<std::string> other_tokens_;  // checked against the log too
  std::unique_ptr<ServerProcess> server_;
  std::map<Credential, std::unique_ptr<Client>> clients_;
};

// The code a call answers: a refusal that does not depend on the request, or the call's own.
StatusCode expected(const Rpc& rpc, Credential credential, bool existing) {
  switch (credential) {
    case Credential::none:
    case Credential::wrong: return StatusCode::UNAUTHENTICATED;
    case Credential::read:
    case Credential::write:
    case Credential::admin: {
      const Role held = credential == Credential::read    ? Role::read
                        : credential == Credential::write ? Role::write
                                                          : Role::admin;
      if (!allows(held, rpc.role)) return StatusCode::PERMISSION_DENIED;
      return existing ? rpc.allowed_existing : rpc.allowed_missing;
    }
  }
  return StatusCode::UNKNOWN;
}

TEST_F(AuthTest, EveryRpcUnderEveryCredentialAnswersItsCode) {
  start();
  const std::vector<Rpc> table = rpcs();
  // The matrix covers the whole service: a new RPC must be added here.
  const google::protobuf::ServiceDescriptor* service =
      v1::ReconstructRequest::descriptor()->file()->FindServiceByName("SvdServe");
  ASSERT_EQ(static_cast<std::size_t>(service->method_count()), table.size());
  for (int i = 0; i < service->method_count(); ++i) {
    EXPECT_EQ(table[static_cast<std::size_t>(i)].method, service->method(i)->name());
  }

  for (const Rpc& rpc : table) {
    for (Credential credential : kCredentials) {
      for (bool existing : {true, false}) {
        if (existing) ensure_existing();
        const grpc::Status status = rpc.call(client(credential), existing);
        EXPECT_EQ(status.error_code(), expected(rpc, credential, existing))
            << rpc.method << " with " << name_of(credential) << ", "
            << (existing ? "an existing" : "a missing") << " id: " << status.error_message();
        // A refusal never says whether the id exists, nor echoes the token.
        if (status.error_code() == StatusCode::UNAUTHENTICATED ||
            status.error_code() == StatusCode::PERMISSION_DENIED) {
          EXPECT_EQ(status.error_message().find(kExisting), std::string::npos);
          EXPECT_EQ(status.error_message().find(kMissing), std::string::npos);
          if (credential != Credential::none) {
            EXPECT_EQ(status.error_message().find(tokens_[credential]), std::string::npos);
          }
        }
      }
    }
  }

  // Health stays open.
  const auto health = client(Credential::none).health();
  ASSERT_TRUE(health.ok()) << health.status().error_message();
  EXPECT_EQ(*health, HealthStatus::serving);

  // Refusals are counted by code, like every answer.
  const auto stats = client(Credential::read).stats();
  ASSERT_TRUE(stats.ok());
  std::map<std::string, uint64_t> get_stats_codes;
  for (const auto& method : stats->methods()) {
    if (method.method() != "GetStats") continue;
    for (const auto& code : method.codes()) get_stats_codes[code.code()] = code.count();
  }
  EXPECT_EQ(get_stats_codes["UNAUTHENTICATED"], 4U);  // no token and a wrong one, twice each

  const std::string log = stopped_log();
  // Write and admin calls are audited with the peer, the token's name, the method and the id.
  EXPECT_NE(log.find("audit peer=ipv4:127.0.0.1:"), std::string::npos);
  EXPECT_NE(log.find("token=writer method=Decompose id=existing.png"), std::string::npos);
  EXPECT_NE(log.find("token=ops method=DeleteImage id=missing.png"), std::string::npos);
  EXPECT_NE(log.find("token=ops method=LoadDirectory id=-"), std::string::npos);
  EXPECT_NE(log.find("token=ops method=Echo id=-"), std::string::npos);
  EXPECT_NE(log.find("token=writer method=Compress id=-"), std::string::npos);
  EXPECT_NE(log.find("token=ops method=StartProfiling id=-"), std::string::npos);
  EXPECT_NE(log.find("token=reader method=DeleteImage id=- refused=PERMISSION_DENIED"),
            std::string::npos);
  EXPECT_NE(log.find("token=writer method=LoadDirectory id=- refused=PERMISSION_DENIED"),
            std::string::npos);
  // Read calls are not.
  EXPECT_EQ(log.find("method=GetStats id="), std::string::npos);
  EXPECT_EQ(log.find("method=Reconstruct id="), std::string::npos);
}

TEST_F(AuthTest, TheAuthorizationMetadataMustBeABearerToken) {
  start();
  const auto call_with = [&](const std::string& value) {
    const auto context = client(Credential::none).new_context();
    context->AddMetadata("authorization", value);
    v1::GetStatsRequest request;
    v1::GetStatsResponse response;
    return client(Credential::none).stub().GetStats(context.get(), request, &response);
  };
  const std::string& token = tokens_[Credential::read];
  EXPECT_EQ(call_with("Bearer " + token).error_code(), StatusCode::OK);
  EXPECT_EQ(call_with("bearer " + token).error_code(), StatusCode::OK);  // the scheme's case
  EXPECT_EQ(call_with("Bearer  " + token + " ").error_code(), StatusCode::OK);
  for (const std::string& refused :
       {"Basic " + token, token, std::string("Bearer "), std::string("Bearer"),
        "Bearer " + token + "x", "Bearer " + token_hash_field(token)}) {
    const grpc::Status status = call_with(refused);
    EXPECT_EQ(status.error_code(), StatusCode::UNAUTHENTICATED) << refused;
    EXPECT_EQ(status.error_message().find(token), std::string::npos) << status.error_message();
  }
  (void)stopped_log();
}

TEST_F(AuthTest, TokensAddedAndRevokedApplyWithoutARestart) {
  start();
  const pid_t pid = server_->pid();
  const std::string added = new_bearer_token();
  other_tokens_.push_back(added);
  auto newcomer = client_with_token(*server_, added);
  EXPECT_EQ(newcomer->stats().status().error_code(), StatusCode::UNAUTHENTICATED);

  const std::string admin_line = token_line(tokens_[Credential::admin], "admin", "ops");
  token_file_.write({admin_line, token_line(added, "read", "newcomer")});
  EXPECT_TRUE(eventually([&] { return newcomer->stats().ok(); }, kReload));
  EXPECT_EQ(newcomer->compress(image_, Rank{2}).status().error_code(),
            StatusCode::PERMISSION_DENIED);
  // The token the file no longer names is refused, on connections that were open before.
  EXPECT_EQ(client(Credential::read).stats().status().error_code(),
            StatusCode::UNAUTHENTICATED);

  // Its role raised.
  token_file_.write({admin_line, token_line(added, "write", "newcomer")});
  EXPECT_TRUE(
      eventually([&] { return newcomer->compress(image_, Rank{2}).ok(); }, kReload));

  // Revoked.
  token_file_.write({admin_line});
  EXPECT_TRUE(eventually(
      [&] { return newcomer->stats().status().error_code() == StatusCode::UNAUTHENTICATED; },
      kReload));
  EXPECT_TRUE(client(Credential::admin).stats().ok());
  EXPECT_EQ(server_->pid(), pid);
  newcomer.reset();  // before the stop, as stopped_log() does with the others

  EXPECT_NE(stopped_log().find("tokens reloaded"), std::string::npos);
}

// --load-dir at start is the server's own call: it passes whatever the token file holds.
TEST_F(AuthTest, TheStartupLoadNeedsNoTokenFromTheFile) {
  token_file_.write({token_line(tokens_[Credential::read], "read", "reader")});
  start({"--load-dir", load_root().string()});
  const auto image = client(Credential::read).get_image("loaded.png");
  EXPECT_TRUE(image.ok()) << image.status().error_message();
  const std::string log = stopped_log();
  EXPECT_NE(log.find("token=svdserve:self method=LoadDirectory"), std::string::npos);
}

TEST_F(AuthTest, CliSendsTheTokenFromAFileOrTheEnvironment) {
  start();
  TempFolder folder("svdserve_cli_token");
  const fs::path token_path = folder.path() / "token";
  std::ofstream(token_path) << tokens_[Credential::read] << "\n";

  const auto cli = [&](std::vector<std::string> args,
                       std::map<std::string, std::string> environment = {}) {
    args.insert(args.begin(), {"--server", server_->address()});
    environment.try_emplace("SVDSERVE_TOKEN", "");  // none from the environment of the tests
    Process process(svdserve::test::cli_binary(), args, environment);
    return process.wait(std::chrono::seconds(60));
  };
  const ProcessResult refused = cli({"stats"});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find("UNAUTHENTICATED"), std::string::npos) << refused.err;

  const ProcessResult from_file = cli({"--token-file", token_path.string(), "stats"});
  EXPECT_EQ(from_file.exit_code, 0) << from_file.err;
  const ProcessResult from_environment =
      cli({"server-info"}, {{"SVDSERVE_TOKEN", tokens_[Credential::read]}});
  EXPECT_EQ(from_environment.exit_code, 0) << from_environment.err;
  // The file wins over the environment; a read token may not delete.
  const ProcessResult denied = cli({"--token-file", token_path.string(), "delete", kMissing},
                                   {{"SVDSERVE_TOKEN", tokens_[Credential::admin]}});
  EXPECT_EQ(denied.exit_code, 1) << denied.err;
  EXPECT_NE(denied.err.find("PERMISSION_DENIED"), std::string::npos) << denied.err;

  const ProcessResult no_file = cli({"--token-file", (folder.path() / "none").string(), "stats"});
  EXPECT_EQ(no_file.exit_code, 1);
  EXPECT_NE(no_file.err.find("cannot read a token"), std::string::npos) << no_file.err;
  (void)stopped_log();
}

// A token file guards a listener that other hosts can reach, but without TLS its tokens cross
// the network readable: that warning, not the unguarded one.
TEST_F(AuthTest, ATokenFileWithoutTlsBeyondLoopbackIsWarnedAboutItsTokens) {
  const int port = free_port();
  Process server(svdserve::test::server_binary(),
                 {"--listen", "0.0.0.0:" + std::to_string(port), "--backend", "cpu",
                  "--durability", "none", "--token-file", token_file_.path()});
  ClientOptions options;
  options.wait_for_ready = true;
  // Health needs no token.
  ASSERT_TRUE(Client("127.0.0.1:" + std::to_string(port), options).health().ok());
  server.signal(SIGTERM);
  const ProcessResult stopped = server.wait(std::chrono::seconds(30));
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_NE(stopped.err.find("authentication=tokens"), std::string::npos) << stopped.err;
  EXPECT_EQ(stopped.err.find("without TLS or authentication"), std::string::npos) << stopped.err;
  EXPECT_NE(stopped.err.find("takes bearer tokens in plaintext"), std::string::npos) << stopped.err;
}

}  // namespace
}  // namespace svdserve::testing
