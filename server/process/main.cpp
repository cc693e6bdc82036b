// svdserve: wires the config, the server and the signals together; nothing else lives here.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

#include "kernels/errors.hpp"
#include "server/process/address_file.hpp"
#include "server/process/config.hpp"
#include "server/process/flags.hpp"
#include "server/runtime/logger.hpp"
#include "server/process/server.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitBadConfig = 2;
constexpr int kExitStartFailed = 3;
constexpr int kExitDrainTimedOut = 4;
constexpr int kExitDevicesLost = 5;  // every GPU failed: a supervisor restarts the process

// Blocks SIGINT/SIGTERM in every thread (threads inherit the mask) so that sigwait() in main is
// the only place they are handled: no work happens inside a signal handler.
sigset_t block_shutdown_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

}  // namespace

int main(int argc, char** argv) {
  const sigset_t signals = block_shutdown_signals();
  svdserve::v1::ServerConfig config;
  svdserve::CommandLine command_line;
  try {
    command_line = svdserve::parse_command_line(argc, argv);
    if (command_line.help) {
      std::fputs(svdserve::usage().c_str(), stdout);
      return kExitOk;
    }
    if (command_line.version) {
      std::puts("svdserve " SVDSERVE_VERSION);
      return kExitOk;
    }
    if (!command_line.config_path.empty()) {
      config = svdserve::read_config_file(command_line.config_path);
    }
    svdserve::apply_overrides(command_line, config);
    svdserve::apply_defaults(config);
    svdserve::validate(config);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "svdserve: %s\n", e.what());
    return kExitBadConfig;
  }

  try {
    svdserve::Server server(config);
    // Wakes the sigwait below. Directed at the main thread: a signal to the process may go to a
    // thread that libraries started before main and that has it unblocked, and end the process.
    const pthread_t main_thread = pthread_self();
    const auto wake_main = [main_thread] { pthread_kill(main_thread, SIGTERM); };
    // The CUDA state of this process is gone: drain what can be answered and exit, so that a
    // supervisor (docker --restart, Kubernetes) starts a process that can compute again.
    server.on_devices_lost(wake_main);
    // --load-dir runs beside the wait for a signal, so that SIGTERM during a long load still
    // shuts down within drain_timeout_ms. A load that fails wakes the wait with SIGTERM itself.
    std::atomic<bool> load_failed{false};
    svdserve::AddressFile address_file(config.address_file());
    std::jthread startup([&] {
      try {
        if (!command_line.load_dir.empty()) {
          const uint32_t loaded = server.load_directory(command_line.load_dir);
          svdserve::log().info("load_dir path={} images={}", command_line.load_dir, loaded);
        }
        server.set_serving(true);
        if (!server.stopping()) {
          address_file.publish(
              svdserve::local_client_address(config.listen_address(), server.port()));
          svdserve::log().info("serving port={}", server.port());
        }
      } catch (const std::exception& e) {
        if (server.stopping()) return;  // the load was cut short by the shutdown
        svdserve::log().critical("svdserve failed: {}", e.what());
        load_failed = true;
        wake_main();
      }
    });

    int signal_number = 0;
    sigwait(&signals, &signal_number);
    if (!load_failed) svdserve::log().info("signal={} received; shutting down", signal_number);
    address_file.withdraw();  // no longer serving: a health check reading it fails at once
    if (!server.shutdown_within_drain_timeout()) {
      // A computation cannot be interrupted: exit without it rather than outlive the limit.
      svdserve::log().error("shutdown: work still running after drain_timeout_ms={}; exiting "
                            "without it",
                            config.drain_timeout_ms());
      svdserve::log().flush();
      std::_Exit(kExitDrainTimedOut);
    }
    if (load_failed) return kExitStartFailed;
    if (server.devices_lost()) return kExitDevicesLost;
  } catch (const std::exception& e) {
    svdserve::log().critical("svdserve failed: {}", e.what());
    return kExitStartFailed;
  }
  return kExitOk;
}
