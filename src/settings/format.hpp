// How settings and their accepted values are written in errors, the README and chorus-info.
#pragma once

#include "settings/settings.hpp"

#include <string>

namespace chorus::settings {

std::string formatSize(int64_t bytes);        // 131072 -> "128K"
std::string formatDuration(int64_t millis);   // 300000 -> "300s"
std::string accepted(const Spec& spec);       // "an integer from 1 to 16", ...
std::string acceptedShort(const Spec& spec);  // "1..16", "4K..1G", "`a`, `b`"
std::string shownDefault(const Spec& spec);   // "300s", or the run-dependent description
std::string shownValue(const Value& value);   // the text, "(unset)", or "<secret>"

}  // namespace chorus::settings
