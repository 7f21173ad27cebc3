// Kept for code written before the settings registry: these forward to it, so the name
// must be declared in src/settings/registry.cpp and a bad value throws. New code calls
// settings::integer / text / bytes / duration directly.
#pragma once

#include "settings/settings.hpp"

#include <cstdint>
#include <string>

namespace chorus {

inline std::string envString(const char* name, const std::string& fallback = {}) {
  return settings::text(name, fallback);
}

inline int64_t envInt(const char* name, int64_t fallback) {
  return settings::integer(name, fallback);
}

inline double envDouble(const char* name, double fallback) {
  const auto* spec = settings::find(name);
  if (spec && spec->type == settings::Type::Duration)
    return settings::isSet(name) ? settings::duration(name).count() / 1000.0 : fallback;
  return static_cast<double>(settings::integer(name, static_cast<int64_t>(fallback)));
}

}  // namespace chorus
