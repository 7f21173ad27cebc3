// Minimal logging: CHORUS_DEBUG=WARN (default), INFO or TRACE; lines go to stderr.
#pragma once

#include <cstdio>
#include <utility>

namespace chorus {

enum class LogLevel { None = 0, Warn = 1, Info = 2, Trace = 3 };

LogLevel logLevel();
void logLine(LogLevel level, const char* text);

template <typename... Args>
void logf(LogLevel level, const char* format, Args&&... args) {
  if (level > logLevel()) return;
  char text[1024];
  std::snprintf(text, sizeof(text), format, std::forward<Args>(args)...);
  logLine(level, text);
}

}  // namespace chorus
