// The shipped Prometheus rules and Grafana dashboard (deploy/) against a real Prometheus scraping
// a real server: promtool accepts and unit-tests the rules, Prometheus loads and evaluates them,
// and every dashboard query runs, the key ones showing the requests this test made.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "prometheus_process.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"
#include "tests/test_paths.hpp"

namespace svdserve::testing {
namespace {

using google::protobuf::Value;

constexpr const char* kNotInstalled =
    "prometheus and promtool are not installed (.ci/install-deps.sh installs Debian's prometheus)";
// Scrapes and rule evaluations come every second; this is many of them.
constexpr auto kPatience = std::chrono::seconds(60);
// Grafana makes $__rate_interval at least four scrape intervals; a minute spans all this test scraped.
constexpr const char* kRateInterval = "1m";

std::filesystem::path deploy_file(const std::string& relative) {
  return std::filesystem::path(svdserve::test::source_dir()) / "deploy" / relative;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

// "SUCCESS: 26 rules found" -> 26; 0 when promtool said no such thing.
int rules_found(const std::string& promtool_output) {
  static const std::regex kFound(R"(SUCCESS: (\d+) rules found)");
  std::smatch found;
  return std::regex_search(promtool_output, found, kFound) ? std::stoi(found[1].str()) : 0;
}

struct Sample {
  std::map<std::string, std::string> labels;
  double value = 0;
};

// The samples of an instant query's vector answer.
std::vector<Sample> samples_of(const Value& answer) {
  std::vector<Sample> samples;
  for (const Value& result : member(member(answer, "data"), "result").list_value().values()) {
    Sample sample;
    for (const auto& [name, label] : member(result, "metric").struct_value().fields()) {
      sample.labels[name] = label.string_value();
    }
    const auto& pair = member(result, "value").list_value().values();  // [time, "value"]
    sample.value = pair.size() == 2 ? std::stod(pair[1].string_value())
                                    : std::numeric_limits<double>::quiet_NaN();
    samples.push_back(std::move(sample));
  }
  return samples;
}

// The value of the first sample carrying all of `labels`, or NaN (which fails any comparison).
double value_of(const std::vector<Sample>& samples, const std::map<std::string, std::string>& labels) {
  for (const Sample& sample : samples) {
    bool matches = true;
    for (const auto& [name, label] : labels) {
      const auto found = sample.labels.find(name);
      matches = matches && found != sample.labels.end() && found->second == label;
    }
    if (matches) return sample.value;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

struct PanelQuery {
  std::string panel;
  std::string ref_id;
  std::string expr;
  std::string datasource_uid;
};

void collect_queries(const Value& panels, std::vector<PanelQuery>& out) {
  for (const Value& panel : panels.list_value().values()) {
    for (const Value& target : member(panel, "targets").list_value().values()) {
      out.push_back({member(panel, "title").string_value(), member(target, "refId").string_value(),
                     member(target, "expr").string_value(),
                     member(member(target, "datasource"), "uid").string_value()});
    }
    collect_queries(member(panel, "panels"), out);  // a collapsed row holds its panels
  }
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// What Grafana would send with `instance` chosen in the dashboard's variable.
std::string with_variables(std::string expr, const std::string& instance) {
  replace_all(expr, "$__rate_interval", kRateInterval);
  replace_all(expr, "${instance}", instance);
  replace_all(expr, "$instance", instance);
  return expr;
}

[[nodiscard]] bool succeeded(const Value& answer) {
  return member(answer, "status").string_value() == "success";
}

std::vector<Value> rules_of(const Value& answer) {
  std::vector<Value> rules;
  for (const Value& group : member(member(answer, "data"), "groups").list_value().values()) {
    for (const Value& rule : member(group, "rules").list_value().values()) rules.push_back(rule);
  }
  return rules;
}

// Prometheus says "0001-01-01T00:00:00Z" for a rule not evaluated yet.
[[nodiscard]] bool evaluated(const Value& rule) {
  return member(rule, "lastEvaluation").string_value().rfind("0001-", 0) != 0;
}

TEST(PrometheusRulesTest, PromtoolAcceptsAndUnitTestsTheRules) {
  if (!prometheus_installed()) GTEST_SKIP() << kNotInstalled;
  const auto check = run_process(kPromtoolBinary,
                                 {"check", "rules", deploy_file("prometheus/svdserve.rules.yml").string()});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_GT(rules_found(check.out + check.err), 0) << check.out << check.err;

  const auto unit = run_process(
      kPromtoolBinary, {"test", "rules", deploy_file("prometheus/svdserve.rules.test.yml").string()});
  EXPECT_EQ(unit.exit_code, 0) << unit.out << unit.err;
}

TEST(PrometheusDeployTest, RulesAndEveryDashboardQueryRunOnARealScrape) {
  if (!prometheus_installed()) GTEST_SKIP() << kNotInstalled;
  const auto rules_file = deploy_file("prometheus/svdserve.rules.yml");
  const auto check = run_process(kPromtoolBinary, {"check", "rules", rules_file.string()});
  const int rules_in_file = rules_found(check.out + check.err);
  ASSERT_GT(rules_in_file, 0) << check.out << check.err;

  ServerProcess server(v1::ServerConfig{});
  ASSERT_TRUE(server.serving());
  const std::string instance = "127.0.0.1:" + std::to_string(server.metrics_port());
  PrometheusProcess prometheus(rules_file, {instance});
  ASSERT_TRUE(prometheus.ready());

  // A scrape before the requests, so that their counters' rates are above zero.
  const auto scraped = [&](const std::string& promql) {
    return !samples_of(prometheus.query(promql)).empty();
  };
  ASSERT_TRUE(eventually([&] { return scraped(R"(up{job="svdserve"} == 1)"); }, kPatience))
      << json_text(prometheus.get("/api/v1/targets"));

  ASSERT_TRUE(server.client().decompose(read_test_image("home.jpg"), 16, "home").ok());
  ASSERT_TRUE(server.client().reconstruct("home", Rank{4}).ok());
  EXPECT_EQ(server.client().reconstruct("home", Rank{99}).status().error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);  // above the rank kept
  ASSERT_TRUE(eventually(
      [&] {
        return scraped(R"(svdserve_requests_total{method="Reconstruct", code="INVALID_ARGUMENT"} == 1)") &&
               scraped("svdserve_bytes_resident > 0");
      },
      kPatience));

  const Value dashboard = parse_json(read_text(deploy_file("grafana/svdserve-dashboard.json")));
  ASSERT_TRUE(dashboard.has_struct_value()) << "the dashboard is not JSON";
  std::vector<PanelQuery> queries;
  collect_queries(member(dashboard, "panels"), queries);
  ASSERT_FALSE(queries.empty());

  std::map<std::string, std::vector<Sample>> answers;  // by "panel/refId"
  for (const PanelQuery& query : queries) {
    SCOPED_TRACE(query.panel + "/" + query.ref_id);
    EXPECT_EQ(query.datasource_uid, "${datasource}");
    const std::string promql = with_variables(query.expr, instance);
    EXPECT_EQ(promql.find('$'), std::string::npos) << "a variable the dashboard does not define: " << promql;
    const Value answer = prometheus.query(promql);
    EXPECT_TRUE(succeeded(answer)) << promql << "\n" << json_text(answer);
    answers[query.panel + "/" + query.ref_id] = samples_of(answer);
  }
  const auto answer = [&](const std::string& panel_and_ref) { return answers[panel_and_ref]; };
  EXPECT_EQ(value_of(answer("Targets up/A"), {{"instance", instance}}), 1);
  EXPECT_GT(value_of(answer("Requests by method and code/A"), {{"method", "Decompose"}, {"code", "OK"}}), 0);
  EXPECT_GT(value_of(answer("Requests by method and code/A"), {{"method", "Reconstruct"}, {"code", "OK"}}), 0);
  EXPECT_GT(value_of(answer("Errors by method and code/A"),
                     {{"method", "Reconstruct"}, {"code", "INVALID_ARGUMENT"}}),
            0);
  EXPECT_TRUE(std::isnan(value_of(answer("Errors by method and code/A"), {{"code", "OK"}})))
      << "OK counted as an error";
  EXPECT_GT(value_of(answer("Job latency p50 and p99 by method/A"), {{"method", "Decompose"}}), 0);
  EXPECT_GT(value_of(answer("Job latency p50 and p99 by method/B"), {{"method", "Reconstruct"}}), 0);
  EXPECT_GT(value_of(answer("Stage latency p99 by method/A"), {{"method", "Decompose"}, {"stage", "compute"}}), 0);
  EXPECT_GE(value_of(answer("Batch sizes/C"), {}), 1);
  EXPECT_EQ(value_of(answer("Queue depth/A"), {{"queue", "decode"}}), 0);
  EXPECT_EQ(value_of(answer("Queue depth/A"), {{"queue", "compute"}}), 0);
  EXPECT_GT(value_of(answer("Queue depth/C"), {{"queue", "decode"}}), 0);
  EXPECT_GT(value_of(answer("Resident bytes vs budget/A"), {{"instance", instance}}), 0);
  EXPECT_GT(value_of(answer("Resident bytes vs budget/B"), {{"instance", instance}}), 0);
  EXPECT_EQ(value_of(answer("Images resident and evictions/A"), {{"instance", instance}}), 1);
  EXPECT_GE(value_of(answer("Factor cache hits and misses/A"), {{"result", "hit"}}), 0);
  EXPECT_EQ(value_of(answer("Devices in service/A"), {{"device", "0"}}), 1);
  EXPECT_GT(value_of(answer("Device memory/A"), {{"device", "0"}}), 0);
  // There, at 0: the CPU backend has no streams to time.
  EXPECT_EQ(value_of(answer("Device busy time/A"), {{"device", "0"}}), 0);

  // The instance variable lists this server: label_values(METRIC, LABEL) is Grafana's, not PromQL.
  const std::regex label_values(R"(label_values\((\w+),\s*(\w+)\))");
  bool instance_variable = false;
  for (const Value& variable : member(member(dashboard, "templating"), "list").list_value().values()) {
    const std::string name = member(variable, "name").string_value();
    if (name == "datasource") {
      EXPECT_EQ(member(variable, "query").string_value(), "prometheus");
    }
    if (name != "instance") continue;
    instance_variable = true;
    const std::string query = member(variable, "query").string_value();
    std::smatch parts;
    ASSERT_TRUE(std::regex_match(query, parts, label_values)) << query;
    const auto values = prometheus.query("count by (" + parts[2].str() + ") (" + parts[1].str() + ")");
    EXPECT_EQ(value_of(samples_of(values), {{"instance", instance}}), 1) << json_text(values);
  }
  EXPECT_TRUE(instance_variable);

  // Every rule of the file loaded and evaluated without error; none alerts on a healthy server.
  std::vector<Value> rules;
  ASSERT_TRUE(eventually(
      [&] {
        rules = rules_of(prometheus.get("/api/v1/rules"));
        return !rules.empty() && std::all_of(rules.begin(), rules.end(), evaluated);
      },
      kPatience))
      << json_text(prometheus.get("/api/v1/rules"));
  EXPECT_EQ(static_cast<int>(rules.size()), rules_in_file);
  for (const Value& rule : rules) {
    const std::string name = member(rule, "name").string_value();
    SCOPED_TRACE(name);
    EXPECT_EQ(member(rule, "health").string_value(), "ok") << member(rule, "lastError").string_value();
    if (member(rule, "type").string_value() == "alerting") {
      EXPECT_EQ(member(rule, "state").string_value(), "inactive") << json_text(rule);
    }
    const Value rule_answer = prometheus.query(member(rule, "query").string_value());
    EXPECT_TRUE(succeeded(rule_answer)) << json_text(rule_answer);
  }
  // Recorded series see the requests (evaluated after the scrape that counted them).
  EXPECT_TRUE(eventually(
      [&] { return scraped(R"(svdserve:requests:rate5m{method="Decompose", code="OK"} > 0)"); }, kPatience));
  EXPECT_TRUE(eventually([&] { return scraped("svdserve:bytes_resident:ratio > 0"); }, kPatience));
  EXPECT_TRUE(eventually(
      [&] {
        return scraped(R"(svdserve:stage_duration_seconds:p50_rate5m{method="Decompose", stage="total"} > 0)");
      },
      kPatience));
}

}  // namespace
}  // namespace svdserve::testing
