// What tests that touch the process environment or run programs share: a guard that sets
// or clears variables and puts every old value back, and a command runner that returns
// the output and exit status. Plain C++, no Chorus library needed.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace chorus::test_support {

// Sets or clears environment variables; on destruction every variable it touched gets
// its value from before (or is unset again).
class EnvGuard {
 public:
  EnvGuard() = default;
  EnvGuard(std::initializer_list<const char*> cleared) {
    for (const char* name : cleared) clear(name);
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;
  ~EnvGuard() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
      it->second ? ::setenv(it->first.c_str(), it->second->c_str(), 1)
                 : ::unsetenv(it->first.c_str());
  }

  void set(const char* name, const std::string& value) {
    remember(name);
    ::setenv(name, value.c_str(), 1);
  }
  void clear(const char* name) {
    remember(name);
    ::unsetenv(name);
  }

 private:
  void remember(const char* name) {
    for (const auto& [saved, value] : saved_)
      if (saved == name) return;
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

struct CommandResult {
  std::string out;  // what the command wrote on stdout (and stderr if it says 2>&1)
  int status = -1;  // exit status; -1 when it did not exit normally or could not start
};

// Runs `command` with /bin/sh and waits for it.
inline CommandResult runCommand(const std::string& command) {
  CommandResult run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return run;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) run.out.append(buf, n);
  const int status = ::pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

}  // namespace chorus::test_support
