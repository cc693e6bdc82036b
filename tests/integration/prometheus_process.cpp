#include "prometheus_process.hpp"

#include <google/protobuf/util/json_util.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <fstream>

#include "server_process.hpp"

namespace svdserve::testing {
namespace {

constexpr auto kStartPatience = std::chrono::seconds(60);
constexpr auto kStopPatience = std::chrono::seconds(20);
// As often as the server can be scraped cheaply: the test waits for a few scrapes.
constexpr const char* kInterval = "1s";

std::string percent_encoded(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

std::string config(const std::filesystem::path& rules_file, const std::vector<std::string>& targets) {
  std::string text = std::string("global:\n") + "  scrape_interval: " + kInterval + "\n" +
                     "  scrape_timeout: " + kInterval + "\n" + "  evaluation_interval: " + kInterval +
                     "\n" + "rule_files:\n  - '" + rules_file.string() + "'\n" +
                     "scrape_configs:\n  - job_name: svdserve\n    static_configs:\n"
                     "      - targets:\n";
  for (const auto& target : targets) text += "          - '" + target + "'\n";
  return text;
}

}  // namespace

bool prometheus_installed() {
  return access(kPrometheusBinary, X_OK) == 0 && access(kPromtoolBinary, X_OK) == 0;
}

google::protobuf::Value parse_json(const std::string& text) {
  google::protobuf::Value value;
  if (!google::protobuf::util::JsonStringToMessage(text, &value).ok()) value.Clear();
  return value;
}

const google::protobuf::Value& member(const google::protobuf::Value& object, const std::string& key) {
  static const google::protobuf::Value kNull;
  if (!object.has_struct_value()) return kNull;
  const auto& fields = object.struct_value().fields();
  const auto found = fields.find(key);
  return found == fields.end() ? kNull : found->second;
}

std::string json_text(const google::protobuf::Value& value) {
  std::string text;
  static_cast<void>(google::protobuf::util::MessageToJsonString(value, &text));
  return text;
}

PrometheusProcess::PrometheusProcess(const std::filesystem::path& rules_file,
                                     const std::vector<std::string>& targets)
    : port_(free_port()) {
  const auto& folder = folder_.path();
  std::ofstream(folder / "prometheus.yml") << config(rules_file, targets);
  process_ = std::make_unique<Process>(
      kPrometheusBinary,
      std::vector<std::string>{"--config.file=" + (folder / "prometheus.yml").string(),
                               "--storage.tsdb.path=" + (folder / "data").string(),
                               "--web.listen-address=127.0.0.1:" + std::to_string(port_)});
  ready_ = eventually(
      [&] { return http_get(port_, "/-/ready").find(" 200 ") != std::string::npos; },
      kStartPatience);
}

PrometheusProcess::~PrometheusProcess() {
  process_->signal(SIGTERM);
  static_cast<void>(process_->wait(kStopPatience));
}

google::protobuf::Value PrometheusProcess::get(const std::string& path) const {
  const std::string answer = http_get(port_, path);
  const auto body_at = answer.find("\r\n\r\n");
  return body_at == std::string::npos ? google::protobuf::Value{} : parse_json(answer.substr(body_at + 4));
}

google::protobuf::Value PrometheusProcess::query(const std::string& promql) const {
  return get("/api/v1/query?query=" + percent_encoded(promql));
}


}  // namespace svdserve::testing
