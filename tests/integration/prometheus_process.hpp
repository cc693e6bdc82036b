#pragma once
// Debian's prometheus, run by the test user in a temp folder, scraping svdserve targets every
// second and loading a rules file; its HTTP API answers as parsed JSON.

#include <google/protobuf/struct.pb.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "process.hpp"
#include "tests/client/temp_folder.hpp"

namespace svdserve::testing {

inline constexpr const char* kPrometheusBinary = "/usr/bin/prometheus";
inline constexpr const char* kPromtoolBinary = "/usr/bin/promtool";

[[nodiscard]] bool prometheus_installed();

// JSON text as a protobuf Value (any JSON document); a null Value when it does not parse.
[[nodiscard]] google::protobuf::Value parse_json(const std::string& text);
// The member `key` of a JSON object, or a null Value.
[[nodiscard]] const google::protobuf::Value& member(const google::protobuf::Value& object,
                                                    const std::string& key);
// A Value as compact JSON: for a failing test's message.
[[nodiscard]] std::string json_text(const google::protobuf::Value& value);

class PrometheusProcess {
 public:
  // Scrapes `targets` ("host:port" of /metrics) as job "svdserve" and evaluates `rules_file`,
  // both every second; ready() says whether its API answered.
  PrometheusProcess(const std::filesystem::path& rules_file, const std::vector<std::string>& targets);
  ~PrometheusProcess();  // SIGTERM (it closes its database), then the exit
  PrometheusProcess(const PrometheusProcess&) = delete;
  PrometheusProcess& operator=(const PrometheusProcess&) = delete;

  [[nodiscard]] bool ready() const noexcept { return ready_; }
  // GET /api/v1/query?query=promql (evaluated now): the whole answer, errors included.
  [[nodiscard]] google::protobuf::Value query(const std::string& promql) const;
  // GET of an API path, e.g. "/api/v1/rules"; a null Value when nothing answered.
  [[nodiscard]] google::protobuf::Value get(const std::string& path) const;

 private:
  TempFolder folder_{"svdserve_prometheus"};
  int port_ = 0;
  std::unique_ptr<Process> process_;
  bool ready_ = false;
};

}  // namespace svdserve::testing
