#include "tests/test_paths.hpp"
#include "server_fixture.hpp"

#include <fstream>
#include <iterator>

namespace svdserve::testing {
namespace {

ClientOptions waiting_client_options() {
  ClientOptions options;
  options.wait_for_ready = true;
  options.timeout = std::chrono::seconds(60);
  return options;
}

}  // namespace

v1::ServerConfig test_config() {
  v1::ServerConfig config;
  config.set_listen_address("127.0.0.1:0");
  config.set_backend(v1::BACKEND_KIND_CPU);
  config.set_worker_threads(2);
  config.set_loader_threads(2);
  config.set_max_queue_delay_us(200);
  config.set_drain_timeout_ms(5000);
  config.set_lame_duck_ms(0);  // tests that want one set it
  config.set_log_level("warn");
  // Memory only: the persistence tests give a server its own data folder.
  config.set_durability(v1::DURABILITY_NONE);
  return config;
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

std::string read_test_image(const std::string& name) {
  return read_file_bytes(std::string(svdserve::test::test_images_dir()) + "/" + name);
}

void ServerFixture::start(v1::ServerConfig config) {
  apply_defaults(config);
  validate(config);
  server_ = std::make_unique<Server>(config);
  server_->set_serving(true);
  client_ = std::make_unique<Client>(target(), waiting_client_options());
}

void ServerFixture::stop() {
  client_.reset();
  if (server_) server_->shutdown();
  server_.reset();
}

std::string ServerFixture::target() const {
  return "127.0.0.1:" + std::to_string(server_->port());
}

}  // namespace svdserve::testing
