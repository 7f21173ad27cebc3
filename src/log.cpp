#include "log.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace chorus {

LogLevel logLevel() {
  static const LogLevel level = [] {
    const char* v = std::getenv("CHORUS_DEBUG");
    if (!v) return LogLevel::Warn;
    if (!strcasecmp(v, "INFO")) return LogLevel::Info;
    if (!strcasecmp(v, "TRACE")) return LogLevel::Trace;
    if (!strcasecmp(v, "NONE")) return LogLevel::None;
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
