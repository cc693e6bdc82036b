#include "process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <sstream>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string_view>

extern char** environ;

namespace svdserve::testing {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

std::string temp_path(const char* suffix) {
  static std::atomic<int> counter{0};
  return (std::filesystem::temp_directory_path() /
          ("svdserve-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + suffix))
      .string();
}

}  // namespace

Process::Process(const std::string& program, const std::vector<std::string>& args,
                 const std::map<std::string, std::string>& environment)
    : out_path_(temp_path(".out")), err_path_(temp_path(".err")) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> variables;
  for (char** variable = environ; *variable != nullptr; ++variable) {
    const std::string_view entry(*variable);
    if (!environment.contains(std::string(entry.substr(0, entry.find('='))))) {
      variables.emplace_back(entry);
    }
  }
  for (const auto& [name, value] : environment) variables.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& variable : variables) envp.push_back(variable.data());
  envp.push_back(nullptr);
  // The test process may block SIGTERM/SIGINT; the child must start with default signals.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  const int error = posix_spawn(&pid_, program.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) throw std::runtime_error("cannot start " + program);
  exit_status_ = std::async(std::launch::async, [pid = pid_] {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  });
}

Process::~Process() {
  if (!waited_) {
    kill(pid_, SIGKILL);
    exit_status_.wait();
  }
  std::filesystem::remove(out_path_);
  std::filesystem::remove(err_path_);
}

void Process::signal(int signal_number) const { kill(pid_, signal_number); }

ProcessResult Process::wait(std::chrono::seconds limit) {
  ProcessResult result;
  if (exit_status_.wait_for(limit) != std::future_status::ready) kill(pid_, SIGKILL);
  result.exit_code = exit_status_.get();
  waited_ = true;
  result.out = slurp(out_path_);
  result.err = slurp(err_path_);
  return result;
}

ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                          std::chrono::seconds limit) {
  Process process(program, args);
  return process.wait(limit);
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

double cpu_seconds(pid_t pid) {
  // Fields 14 and 15 (utime, stime) in clock ticks, after the parenthesised command name.
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) return 0.0;
  std::istringstream fields(stat.substr(name_end + 2));
  std::string field;
  long long ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::stoll(field);
  }
  return static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace svdserve::testing
