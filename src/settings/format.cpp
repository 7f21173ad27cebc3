#include "settings/format.hpp"

namespace chorus::settings {
namespace {

std::string choiceList(std::string_view choices, const char* quote) {
  std::string out;
  while (!choices.empty()) {
    const size_t bar = choices.find('|');
    std::string_view choice = choices.substr(0, bar);
    choices = bar == std::string_view::npos ? std::string_view{} : choices.substr(bar + 1);
    if (choice.find('=') != std::string_view::npos) continue;  // synonyms: in the help line
    if (!out.empty()) out += ", ";
    out.append(quote).append(choice).append(quote);
  }
  return out;
}

}  // namespace

std::string_view typeName(Type type) {
  switch (type) {
    case Type::Integer:
      return "integer";
    case Type::Size:
      return "size";
    case Type::Duration:
      return "duration";
    case Type::Boolean:
      return "boolean";
    case Type::Enum:
      return "enum";
    case Type::List:
      return "list";
    case Type::String:
      return "string";
    case Type::Path:
      return "path";
  }
  return "?";
}

std::string_view scopeName(Scope scope) {
  switch (scope) {
    case Scope::Library:
      return "library";
    case Scope::Launcher:
      return "launcher";
    case Scope::Launch:
      return "launch";
    case Scope::Test:
      return "test";
  }
  return "?";
}

std::string_view sourceName(Source source) {
  switch (source) {
    case Source::Default:
      return "default";
    case Source::Environment:
      return "environment";
    case Source::Alias:
      return "alias";
  }
  return "?";
}

std::string formatSize(int64_t bytes) {
  for (auto [unit, shift] : {std::pair{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}})
    if (bytes != 0 && bytes % (int64_t{1} << shift) == 0)
      return std::to_string(bytes >> shift) + unit;
  return std::to_string(bytes);
}

std::string formatDuration(int64_t millis) {
  for (auto [unit, ms] : {std::pair{"h", 3'600'000}, {"m", 60'000}, {"s", 1000}})
    if (millis != 0 && millis % ms == 0) return std::to_string(millis / ms) + unit;
  return std::to_string(millis) + "ms";
}

std::string accepted(const Spec& s) {
  switch (s.type) {
    case Type::Integer:
      return "an integer from " + std::to_string(s.min) + " to " + std::to_string(s.max);
    case Type::Size:
      return "a size from " + formatSize(s.min) + " to " + formatSize(s.max) +
             " (bytes, or with a K, M or G suffix)";
    case Type::Duration:
      return "a duration from " + formatDuration(s.min) + " to " + formatDuration(s.max) +
             " (a number with ms, s, m or h; a bare number is seconds)";
    case Type::Boolean:
      return "a boolean: 1, 0, true, false, yes, no, on or off";
    case Type::Enum:
      return "one of " + choiceList(s.choices, "") + " (any case)";
    case Type::List:
      return "a list in NCCL syntax: name[,name...], ^ first to exclude, = first for exact names";
    case Type::String:
      return "printable text";
    case Type::Path:
      return "a path";
  }
  return "?";
}

std::string acceptedShort(const Spec& s) {
  switch (s.type) {
    case Type::Integer:
      return std::to_string(s.min) + "..." + std::to_string(s.max);
    case Type::Size:
      return formatSize(s.min) + "..." + formatSize(s.max);
    case Type::Duration:
      return formatDuration(s.min) + "..." + formatDuration(s.max);
    case Type::Boolean:
      return "`1`, `0`";
    case Type::Enum:
      return choiceList(s.choices, "`");
    case Type::List:
      return "NCCL list";
    case Type::String:
      return "text";
    case Type::Path:
      return "path";
  }
  return "?";
}

std::string shownDefault(const Spec& s) {
  if (!s.shownDefault.empty()) return std::string(s.shownDefault);
  if (s.defaultText.empty()) return "unset";
  std::string shown = "`";  // built in steps: GCC 12 warns falsely on "`" + string + "`"
  shown.append(s.defaultText);
  return shown.append("`");
}

std::string shownValue(const Value& v) {
  if (v.spec && v.spec->secret && v.source != Source::Default) return "<secret>";
  if (v.source == Source::Default && v.text.empty())
    return v.spec && !v.spec->shownDefault.empty() ? "(auto)" : "(unset)";
  return v.text;
}

}  // namespace chorus::settings
