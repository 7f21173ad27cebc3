#include "log.hpp"

#include "settings/settings.hpp"

#include <chorus/chorus.hpp>

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace chorus {

LogLevel logLevel() {
  static const LogLevel level = [] {
    std::string v;
    try {
      v = settings::text("CHORUS_DEBUG");  // WARN unless set (or NCCL_DEBUG is)
    } catch (const Error&) {
      return LogLevel::Warn;  // validateProcess fails the communicator naming the value
    }
    if (v == "INFO") return LogLevel::Info;
    if (v == "TRACE") return LogLevel::Trace;
    if (v == "NONE") return LogLevel::None;
    return LogLevel::Warn;
  }();
  return level;
}

void logLine(LogLevel level, const char* text) {
  static const char* names[] = {"", "WARN", "INFO", "TRACE"};
  char host[64] = "?";
  gethostname(host, sizeof(host) - 1);
  std::fprintf(stderr, "%s:%d CHORUS %s %s\n", host, static_cast<int>(getpid()),
               names[static_cast<int>(level)], text);
}

}  // namespace chorus
