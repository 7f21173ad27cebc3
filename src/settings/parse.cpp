// Parsing and reading settings: each type's syntax, the alias rule, the accessors.
#include "settings/format.hpp"
#include "settings/settings.hpp"

#include "errors.hpp"

#include <unistd.h>

#include <strings.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace chorus::settings {
namespace {

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

[[noreturn]] void reject(const Spec& spec, std::string_view variable, std::string_view text,
                         Source source) {
  std::string where = source == Source::Alias ? " (read as " + std::string(spec.name) + ")" : "";
  std::string shown = spec.secret ? "<secret>" : std::string(text);
  throwInvalid(processName() + ": " + std::string(variable) + "='" + shown + "'" + where +
               " is not accepted: expected " + accepted(spec));
}

// Digits with an optional sign; false on anything else or overflow.
bool parseInteger(std::string_view text, int64_t& out) {
  std::string s(text);
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str() || *end != '\0') return false;
  out = v;
  return true;
}

// "131072", "128K", "4MiB", "1G" (binary units, as NCCL's sizes).
bool parseSize(std::string_view text, int64_t& out) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 18) return false;
  int64_t value = std::stoll(std::string(text.substr(0, digits)));
  const std::string_view unit = text.substr(digits);
  int shift = -1;
  for (auto [suffix, bits] : {std::pair{"", 0},
                              {"B", 0},
                              {"K", 10},
                              {"KB", 10},
                              {"KiB", 10},
                              {"M", 20},
                              {"MB", 20},
                              {"MiB", 20},
                              {"G", 30},
                              {"GB", 30},
                              {"GiB", 30},
                              {"T", 40},
                              {"TB", 40},
                              {"TiB", 40}})
    if (equalsIgnoringCase(unit, suffix)) shift = bits;
  if (shift < 0 || value > (INT64_MAX >> shift)) return false;
  out = value << shift;
  return true;
}

// "300", "30s", "1.5s", "500ms", "2m", "1h": milliseconds; a bare number is seconds.
bool parseDuration(std::string_view text, int64_t& out) {
  std::string s(text);
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.')) return false;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end == s.c_str() || !std::isfinite(v)) return false;
  const std::string_view unit(end);
  double perUnit = -1;
  for (auto [suffix, ms] : {std::pair{"", 1000.0},
                            {"s", 1000.0},
                            {"ms", 1.0},
                            {"m", 60'000.0},
                            {"min", 60'000.0},
                            {"h", 3'600'000.0}})
    if (unit == suffix) perUnit = ms;
  if (perUnit < 0 || v * perUnit > 9e15) return false;
  out = static_cast<int64_t>(std::llround(v * perUnit));
  return true;
}

bool parseBoolean(std::string_view text, int64_t& out) {
  for (const char* yes : {"1", "true", "yes", "on"})
    if (equalsIgnoringCase(text, yes)) return out = 1, true;
  for (const char* no : {"0", "false", "no", "off"})
    if (equalsIgnoringCase(text, no)) return out = 0, true;
  return false;
}

// Case-insensitive; "alias=canonical" choices map a synonym onto its canonical name.
std::optional<std::string> parseEnum(std::string_view choices, std::string_view text) {
  while (!choices.empty()) {
    const size_t bar = choices.find('|');
    std::string_view choice = choices.substr(0, bar);
    choices = bar == std::string_view::npos ? std::string_view{} : choices.substr(bar + 1);
    std::string_view canonical = choice;
    if (size_t eq = choice.find('='); eq != std::string_view::npos) {
      canonical = choice.substr(eq + 1);
      choice = choice.substr(0, eq);
    }
    if (equalsIgnoringCase(text, choice)) return std::string(canonical);
  }
  return std::nullopt;
}

// NCCL's list syntax: [^][=]item[,item...]; items of letters, digits and _ . : - ^ + /.
bool parseList(std::string_view text) {
  bool anyItem = false;
  for (char c : text) {
    const bool itemChar = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
                          c == ':' || c == '-' || c == '^' || c == '+' || c == '/' || c == '=';
    if (!itemChar && c != ',' && c != ' ') return false;
    anyItem = anyItem || (itemChar && c != '^' && c != '=');
  }
  return anyItem;
}

bool printable(std::string_view text) {
  for (char c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return true;
}

const Spec& specOf(std::string_view name) {
  const Spec* spec = find(name);
  if (!spec) throw std::logic_error("chorus: setting " + std::string(name) + " is not declared");
  return *spec;
}

}  // namespace

Environment processEnvironment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
}

Value parse(const Spec& spec, std::string_view variable, std::string_view text, Source source) {
  Value v;
  v.spec = &spec;
  v.source = source;
  v.variable = std::string(variable);
  v.raw = std::string(text);
  v.text = v.raw;
  bool ok = true;
  switch (spec.type) {
    case Type::Integer:
      ok = parseInteger(text, v.number);
      break;
    case Type::Size:
      ok = parseSize(text, v.number);
      break;
    case Type::Duration:
      ok = parseDuration(text, v.number);
      break;
    case Type::Boolean:
      ok = parseBoolean(text, v.number);
      if (ok) v.text = v.number ? "1" : "0";
      break;
    case Type::Enum: {
      auto canonical = parseEnum(spec.choices, text);
      ok = canonical.has_value();
      if (ok) v.text = *canonical;
      break;
    }
    case Type::List:
      ok = parseList(text);
      break;
    case Type::String:
    case Type::Path:
      ok = printable(text);
      break;
  }
  const bool numeric =
      spec.type == Type::Integer || spec.type == Type::Size || spec.type == Type::Duration;
  if (!ok || (numeric && (v.number < spec.min || v.number > spec.max)))
    reject(spec, variable, text, source);
  return v;
}

Value read(const Spec& spec, const Environment& env) {
  std::optional<std::string> own = env(spec.name);
  std::optional<std::string> alias = spec.alias.empty() ? std::nullopt : env(spec.alias);
  if (own) {
    Value v = parse(spec, spec.name, *own, Source::Environment);
    v.overridden = alias.has_value();
    return v;
  }
  if (alias) return parse(spec, spec.alias, *alias, Source::Alias);
  if (spec.defaultText.empty()) {
    Value v;
    v.spec = &spec;
    return v;
  }
  Value v = parse(spec, spec.name, spec.defaultText, Source::Default);
  v.raw.clear();
  return v;
}

namespace {
Value current(std::string_view name) { return read(specOf(name), processEnvironment()); }
}  // namespace

int64_t integer(std::string_view name) { return current(name).number; }
int64_t integer(std::string_view name, int64_t fallback) {
  Value v = current(name);
  return v.source == Source::Default ? fallback : v.number;
}
size_t bytes(std::string_view name) { return static_cast<size_t>(current(name).number); }
size_t bytes(std::string_view name, size_t fallback) {
  Value v = current(name);
  return v.source == Source::Default ? fallback : static_cast<size_t>(v.number);
}
std::chrono::milliseconds duration(std::string_view name) {
  return std::chrono::milliseconds(current(name).number);
}
bool boolean(std::string_view name) { return current(name).number != 0; }
std::string text(std::string_view name) { return current(name).text; }
std::string text(std::string_view name, const std::string& fallback) {
  Value v = current(name);
  return v.source == Source::Default ? fallback : v.text;
}
const char* cstr(std::string_view name) {
  Value v = current(name);
  if (v.source == Source::Default) return nullptr;
  return std::getenv(v.variable.c_str());
}
bool isSet(std::string_view name) { return current(name).source != Source::Default; }

std::string processName() {
  char host[256] = "?";
  ::gethostname(host, sizeof(host) - 1);
  return "host " + std::string(host) + ", pid " + std::to_string(::getpid());
}

std::vector<std::string> splitList(std::string_view text, char separator) {
  std::vector<std::string> items;
  if (text.empty()) return items;
  for (size_t at = 0;;) {
    const size_t end = std::min(text.find(separator, at), text.size());
    items.emplace_back(text.substr(at, end - at));
    if (end == text.size()) return items;
    at = end + 1;
  }
}

}  // namespace chorus::settings
