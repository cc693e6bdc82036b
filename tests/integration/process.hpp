#pragma once
// Runs the real svdserve and svdserve-cli binaries from tests: spawn, capture output, signal,
// and wait for exit with a time limit (a thread blocks in waitpid; nothing polls or sleeps).

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <map>
#include <string>
#include <vector>

namespace svdserve::testing {

struct ProcessResult {
  int exit_code = -1;  // -1: killed after the time limit
  std::string out;
  std::string err;
};

class Process {
 public:
  // Starts program with args and this process's environment, plus `environment` (which wins);
  // stdout and stderr go to files read back by wait().
  Process(const std::string& program, const std::vector<std::string>& args,
          const std::map<std::string, std::string>& environment = {});
  ~Process();  // kills the process if it still runs
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  void signal(int signal_number) const;
  // Waits up to the limit, then kills it (exit_code -1).
  ProcessResult wait(std::chrono::seconds limit);

 private:
  pid_t pid_ = -1;
  std::string out_path_;
  std::string err_path_;
  std::future<int> exit_status_;
  bool waited_ = false;
};

// Runs to completion (at most `limit`).
ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                          std::chrono::seconds limit = std::chrono::seconds(120));

// A loopback TCP port that was free a moment ago.
[[nodiscard]] int free_port();

// The CPU time a running process has used, user and system, in seconds; 0 when unreadable.
[[nodiscard]] double cpu_seconds(pid_t pid);

}  // namespace svdserve::testing
