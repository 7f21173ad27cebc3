// Typed reads of environment variables with defaults.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

namespace chorus {

inline std::string envString(const char* name, const std::string& fallback = {}) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

inline int64_t envInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long long parsed = std::strtoll(v, &end, 10);
  return end && *end == '\0' ? parsed : fallback;
}

inline double envDouble(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  double parsed = std::strtod(v, &end);
  return end && *end == '\0' ? parsed : fallback;
}

}  // namespace chorus
