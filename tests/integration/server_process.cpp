#include "server_process.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <google/protobuf/text_format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/test_paths.hpp"

namespace svdserve::testing {
namespace {

// How often eventually() looks again: far below the times the tests wait for.
constexpr auto kPollInterval = std::chrono::milliseconds(20);
constexpr auto kStartPatience = std::chrono::seconds(30);

// "VmRSS:     1234 kB" -> bytes.
uint64_t status_kib_field(const std::string& status, const std::string& field) {
  const auto at = status.find(field + ":");
  if (at == std::string::npos) return 0;
  return std::stoull(status.substr(at + field.size() + 1)) * 1024;
}

}  // namespace

ProcessMemory memory_of(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/status");
  std::stringstream text;
  text << file.rdbuf();
  const std::string status = text.str();
  return {status_kib_field(status, "VmRSS"), status_kib_field(status, "VmHWM")};
}

int connect_loopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string http_get(int port, const std::string& path) {
  const int fd = connect_loopback(port);
  if (fd < 0) return {};
  constexpr timeval kAnswerTimeout{5, 0};  // a scrape that hangs fails its test, not the suite
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &kAnswerTimeout, sizeof(kAnswerTimeout));
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) {
    response.append(buffer, static_cast<std::size_t>(n));
  }
  close(fd);
  return response;
}

double metric_sample(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

bool eventually(const std::function<bool()>& reached, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!reached()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kPollInterval);
  }
  return true;
}

ServerProcess::ServerProcess(const std::vector<std::string>& args,
                             std::optional<ClientTls> client_tls)
    : client_tls_(std::move(client_tls)), port_(free_port()) {
  // Memory only unless the test asks for a data folder (a later --durability wins).
  std::vector<std::string> command_line{"--listen",    address(),   "--backend",   "cpu",
                                        "--log-level", "info",      "--durability", "none"};
  command_line.insert(command_line.end(), args.begin(), args.end());
  start(command_line);
}

ServerProcess::ServerProcess(v1::ServerConfig config) : port_(free_port()) {
  metrics_port_ = free_port();
  config.set_listen_address(address());
  config.set_metrics_port(static_cast<uint32_t>(metrics_port_));
  config.set_backend(v1::BACKEND_KIND_CPU);
  // Memory only unless the test asks for a data folder: tests run side by side in one folder.
  if (config.durability() == v1::DURABILITY_UNSPECIFIED) {
    config.set_durability(v1::DURABILITY_NONE);
  }
  config_path_ = (std::filesystem::temp_directory_path() /
                  ("svdserve-test-" + std::to_string(getpid()) + "-" + std::to_string(port_) +
                   ".textproto"))
                     .string();
  std::string text;
  google::protobuf::TextFormat::PrintToString(config, &text);
  std::ofstream(config_path_) << text;
  start({"--config", config_path_});
}

void ServerProcess::start(const std::vector<std::string>& args) {
  process_ = std::make_unique<Process>(svdserve::test::server_binary(), args);
  client_ = new_client(kStartPatience);
  const auto health = client_->health();
  serving_ = health.ok() && *health == HealthStatus::serving;
  client_ = new_client();
}

ServerProcess::~ServerProcess() {
  client_.reset();
  process_.reset();  // kills it if still running
  if (!config_path_.empty()) std::filesystem::remove(config_path_);
}

std::unique_ptr<Client> ServerProcess::new_client(std::chrono::milliseconds timeout) const {
  ClientOptions options;
  options.wait_for_ready = true;
  options.timeout = timeout;
  options.dedicated_connection = true;
  options.tls = client_tls_;
  return std::make_unique<Client>(address(), options);
}

ProcessResult ServerProcess::stop(std::chrono::seconds limit) {
  process_->signal(SIGTERM);
  return process_->wait(limit);
}

}  // namespace svdserve::testing
