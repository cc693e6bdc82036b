// Server reflection is what lets ghz and grpcurl call svdserve without the .proto file. The
// reflection messages are encoded and decoded by hand here: linking generated copies of them
// next to libgrpc++_reflection's own would register the same protobuf types twice.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <regex>
#include <set>

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/generic/generic_stub.h>

#include "server_fixture.hpp"
#include "server_process.hpp"
#include "tests/test_paths.hpp"

namespace svdserve::testing {
namespace {

constexpr const char* kMethod = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";
// ServerReflectionRequest fields (grpc/reflection/v1alpha/reflection.proto).
constexpr int kFileContainingSymbol = 4;
constexpr int kListServices = 7;
// ServerReflectionResponse fields.
constexpr int kFileDescriptorResponse = 4;
constexpr int kListServicesResponse = 6;

std::string length_delimited(int field, const std::string& value) {
  std::string out(1, static_cast<char>((field << 3) | 2));
  std::size_t length = value.size();
  do {
    uint8_t byte = length & 0x7f;
    length >>= 7;
    out.push_back(static_cast<char>(byte | (length ? 0x80 : 0)));
  } while (length);
  return out + value;
}

// All length-delimited values of `field` in a serialized message.
std::vector<std::string> fields(const std::string& message, int field) {
  google::protobuf::UnknownFieldSet set;
  EXPECT_TRUE(set.ParseFromString(message));
  std::vector<std::string> values;
  for (int i = 0; i < set.field_count(); ++i) {
    if (set.field(i).number() == field &&
        set.field(i).type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      values.push_back(set.field(i).length_delimited());
    }
  }
  return values;
}

// One bidirectional reflection stream over a completion queue.
class ReflectionStream {
 public:
  explicit ReflectionStream(const std::shared_ptr<grpc::Channel>& channel) : stub_(channel) {
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    call_ = stub_.PrepareCall(&context_, kMethod, &queue_);
    call_->StartCall(tag(1));
    EXPECT_TRUE(next(1));
  }
  ~ReflectionStream() {
    call_->WritesDone(tag(4));
    next(4);
    grpc::Status status;
    call_->Finish(&status, tag(5));
    next(5);
    queue_.Shutdown();
    void* ignored_tag;
    bool ignored_ok;
    while (queue_.Next(&ignored_tag, &ignored_ok)) {}
  }

  std::string ask(const std::string& request) {
    const grpc::Slice slice(request);
    grpc::ByteBuffer buffer(&slice, 1);
    call_->Write(buffer, tag(2));
    EXPECT_TRUE(next(2));
    grpc::ByteBuffer answer;
    call_->Read(&answer, tag(3));
    EXPECT_TRUE(next(3));
    std::vector<grpc::Slice> slices;
    EXPECT_TRUE(answer.Dump(&slices).ok());
    std::string bytes;
    for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    return bytes;
  }

 private:
  static void* tag(intptr_t n) { return reinterpret_cast<void*>(n); }
  bool next(intptr_t expected) {
    void* got = nullptr;
    bool ok = false;
    EXPECT_TRUE(queue_.Next(&got, &ok));
    EXPECT_EQ(got, tag(expected));
    return ok;
  }

  grpc::GenericStub stub_;
  grpc::ClientContext context_;
  grpc::CompletionQueue queue_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call_;
};

using ReflectionTest = ServerFixture;

TEST_F(ReflectionTest, ListsTheServiceAndServesItsDescriptor) {
  start();
  ReflectionStream stream(client_->channel());

  const std::string listed = stream.ask(length_delimited(kListServices, ""));
  std::vector<std::string> names;
  for (const auto& list : fields(listed, kListServicesResponse)) {
    for (const auto& service : fields(list, 1)) {
      for (const auto& name : fields(service, 1)) names.push_back(name);
    }
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "svdserve.v1.SvdServe"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "grpc.health.v1.Health"), names.end());

  const std::string file =
      stream.ask(length_delimited(kFileContainingSymbol, "svdserve.v1.SvdServe"));
  const auto responses = fields(file, kFileDescriptorResponse);
  ASSERT_EQ(responses.size(), 1u);
  const auto descriptors = fields(responses[0], 1);
  ASSERT_FALSE(descriptors.empty());
  google::protobuf::FileDescriptorProto descriptor;
  ASSERT_TRUE(descriptor.ParseFromString(descriptors[0]));
  EXPECT_EQ(descriptor.package(), "svdserve.v1");
  bool has_compress = false;
  for (const auto& service : descriptor.service()) {
    for (const auto& method : service.method()) has_compress |= method.name() == "Compress";
  }
  EXPECT_TRUE(has_compress);
}

// The descriptor of the file that defines `symbol`, as reflection serves it; fails the test when
// reflection answers an error instead.
google::protobuf::FileDescriptorProto file_containing(ReflectionStream& stream,
                                                      const std::string& symbol) {
  const std::string answer = stream.ask(length_delimited(kFileContainingSymbol, symbol));
  const auto responses = fields(answer, kFileDescriptorResponse);
  google::protobuf::FileDescriptorProto descriptor;
  EXPECT_EQ(responses.size(), 1u) << symbol << ": reflection answered an error";
  if (responses.empty()) return descriptor;
  const auto descriptors = fields(responses[0], 1);
  EXPECT_FALSE(descriptors.empty());
  if (!descriptors.empty()) {
    EXPECT_TRUE(descriptor.ParseFromString(descriptors[0]));
  }
  return descriptor;
}

bool has_service(const google::protobuf::FileDescriptorProto& file, const std::string& name) {
  return std::any_of(file.service().begin(), file.service().end(),
                     [&](const auto& service) { return service.name() == name; });
}

// What grpcurl and ghz do before calling grpc.health.v1.Health/Check: ask for its descriptor.
// The real binary: this test process links the health service's generated code anyway.
TEST(ServerBinaryReflectionTest, DescribesTheHealthServiceItLists) {
  v1::ServerConfig config;
  config.set_log_level("warn");
  const ServerProcess server(config);
  ASSERT_TRUE(server.serving());
  ReflectionStream stream(server.new_client()->channel());
  const auto health = file_containing(stream, "grpc.health.v1.Health");
  EXPECT_EQ(health.package(), "grpc.health.v1");
  EXPECT_TRUE(has_service(health, "Health"));
}

// One reflection request as a unary call: its status (the list of services, when it is OK).
grpc::Status list_services(const std::shared_ptr<grpc::Channel>& channel) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  const grpc::Slice slice(length_delimited(kListServices, ""));
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> answered;
  stub.UnaryCall(&context, kMethod, grpc::StubOptions(), &request, &response,
                 [&](grpc::Status status) { answered.set_value(std::move(status)); });
  return answered.get_future().get();
}

// `--reflection false`: the reflection service is not offered; the API still is.
TEST(ServerBinaryReflectionTest, OffWhenTheFlagSaysSo) {
  const ServerProcess off({"--reflection", "false", "--log-level", "warn"});
  ASSERT_TRUE(off.serving());
  const grpc::Status refused = list_services(off.new_client()->channel());
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNIMPLEMENTED) << refused.error_message();
  EXPECT_TRUE(off.client().server_info().ok());

  const ServerProcess on({"--reflection", "true", "--log-level", "warn"});
  ASSERT_TRUE(on.serving());
  const grpc::Status listed = list_services(on.new_client()->channel());
  EXPECT_TRUE(listed.ok()) << listed.error_message();
}

// The protoset the build writes, for tools without reflection: both services, with imports.
TEST(Protoset, HoldsTheServiceAndTheHealthService) {
  google::protobuf::FileDescriptorSet set;
  ASSERT_TRUE(set.ParseFromString(read_file_bytes(svdserve::test::protoset())))
      << svdserve::test::protoset();
  bool svdserve = false;
  bool health = false;
  for (const auto& file : set.file()) {
    svdserve |= file.package() == "svdserve.v1" && has_service(file, "SvdServe");
    health |= file.package() == "grpc.health.v1" && has_service(file, "Health");
  }
  EXPECT_TRUE(svdserve);
  EXPECT_TRUE(health);
}

// The ghz configs the repository ships: each calls a method the protoset describes, and runs a
// count of requests rather than a duration (at the end of a duration ghz cancels the calls in
// flight and reports them as errors).
TEST(GhzConfigs, CountRequestsAndCallMethodsTheServerHas) {
  google::protobuf::FileDescriptorSet set;
  ASSERT_TRUE(set.ParseFromString(read_file_bytes(svdserve::test::protoset())));
  std::set<std::string> methods;
  for (const auto& file : set.file()) {
    for (const auto& service : file.service()) {
      for (const auto& method : service.method()) {
        methods.insert(file.package() + "." + service.name() + "." + method.name());
      }
    }
  }
  const std::filesystem::path folder =
      std::filesystem::path(svdserve::test::source_dir()) / "config" / "ghz";
  int configs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() != ".json") continue;
    ++configs;
    const std::string text = read_file_bytes(entry.path().string());
    std::smatch call;
    ASSERT_TRUE(std::regex_search(text, call, std::regex(R"re("call"\s*:\s*"([^"]+)")re")))
        << entry.path();
    EXPECT_TRUE(methods.contains(call[1].str())) << entry.path() << " calls " << call[1];
    EXPECT_EQ(text.find("\"duration\""), std::string::npos) << entry.path();
    EXPECT_NE(text.find("\"total\""), std::string::npos) << entry.path();
    EXPECT_NE(text.find("\"max-recv-message-size\""), std::string::npos) << entry.path();
  }
  EXPECT_GE(configs, 3);
}

}  // namespace
}  // namespace svdserve::testing
