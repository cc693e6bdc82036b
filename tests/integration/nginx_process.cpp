#include "nginx_process.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <regex>
#include <stdexcept>

#include "client/client.hpp"
#include "server_process.hpp"
#include "tests/test_paths.hpp"

namespace svdserve::testing {
namespace {

constexpr auto kStartPatience = std::chrono::seconds(20);
constexpr auto kStopPatience = std::chrono::seconds(20);
constexpr auto kProbeTimeout = std::chrono::seconds(2);

std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read " + path.string());
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

// The http {} context the shipped file is included in, as /etc/nginx/nginx.conf would give it,
// with every path nginx writes under `folder` (the test user cannot write /var/lib/nginx).
std::string main_config(const std::filesystem::path& folder) {
  const std::string dir = folder.string();
  return "worker_processes 1;\n"
         "pid " + dir + "/nginx.pid;\n"
         "events { worker_connections 1024; }\n"
         "http {\n"
         "  access_log off;\n"
         "  client_body_temp_path " + dir + "/client_body;\n"
         "  proxy_temp_path " + dir + "/proxy;\n"
         "  fastcgi_temp_path " + dir + "/fastcgi;\n"
         "  uwsgi_temp_path " + dir + "/uwsgi;\n"
         "  scgi_temp_path " + dir + "/scgi;\n"
         "  include " + dir + "/svdserve.conf;\n"
         "}\n";
}

}  // namespace

bool nginx_installed() { return access(kNginxBinary, X_OK) == 0; }

std::string nginx_site_for(const std::string& shipped, int listen_port,
                           const std::vector<std::string>& upstreams) {
  const std::regex listener(R"(\n\s*listen\s+(\d+)\s)");
  std::smatch found;
  if (!std::regex_search(shipped, found, listener)) throw std::runtime_error("the nginx example has no `listen PORT`");
  const auto port_at = static_cast<std::size_t>(found.position(1));
  std::string site = shipped;
  site.replace(port_at, static_cast<std::size_t>(found.length(1)), "127.0.0.1:" + std::to_string(listen_port));

  const std::regex example_server(R"((\n\s*server\s+)127\.0\.0\.1:\d+)");
  std::string replaced;
  std::size_t count = 0;
  auto rest = site.cbegin();
  for (std::sregex_iterator it(site.cbegin(), site.cend(), example_server), end; it != end; ++it) {
    if (count == upstreams.size()) throw std::runtime_error("the nginx example has more servers than replicas");
    replaced.append(rest, (*it)[0].first).append((*it)[1].str()).append(upstreams[count++]);
    rest = (*it)[0].second;
  }
  if (count != upstreams.size()) throw std::runtime_error("the nginx example has fewer servers than replicas");
  replaced.append(rest, site.cend());
  return replaced;
}

NginxProcess::NginxProcess(const std::vector<std::string>& upstreams) : port_(free_port()) {
  const auto shipped = read_text(std::filesystem::path(svdserve::test::source_dir()) / "deploy" / "nginx" /
                                 "svdserve.conf");
  const auto& folder = folder_.path();
  std::ofstream(folder / "svdserve.conf") << nginx_site_for(shipped, port_, upstreams);
  std::ofstream(folder / "nginx.conf") << main_config(folder);
  process_ = std::make_unique<Process>(
      kNginxBinary, std::vector<std::string>{"-e", (folder / "error.log").string(), "-p", folder.string() + "/", "-c",
                                             (folder / "nginx.conf").string(), "-g", "daemon off;"});

  // Through nginx to a replica: nginx listens, parsed the example and reaches an upstream.
  ClientOptions options;
  options.timeout = kProbeTimeout;
  options.dedicated_connection = true;
  const Client probe(address(), options);
  ready_ = eventually(
      [&] {
        const auto health = probe.health();
        return health.ok() && *health == HealthStatus::serving;
      },
      kStartPatience);
}

NginxProcess::~NginxProcess() {
  // SIGTERM, not the SIGKILL Process's destructor sends: a killed master leaves its workers
  // running, holding the port.
  process_->signal(SIGTERM);
  static_cast<void>(process_->wait(kStopPatience));
}

std::string NginxProcess::log() const {
  try {
    return read_text(folder_.path() / "error.log");
  } catch (const std::runtime_error&) {
    return {};
  }
}

}  // namespace svdserve::testing
