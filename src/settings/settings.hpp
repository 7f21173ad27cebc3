// Every CHORUS_* setting, declared once (registry.cpp): its type, default, accepted values,
// help line and NCCL alias. Code reads settings only through these accessors; a bad value
// throws Error(InvalidArgument) naming the variable, the value and what is accepted.
//
// Accessors read the environment when called (set-up time only), so a value changed with
// setenv before a communicator is created takes effect. validateProcess() checks them all
// at communicator creation (and in chorus-run, chorus-perf, chorus-info).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace chorus::settings {

enum class Type { Integer, Size, Duration, Boolean, Enum, List, String, Path };
// Who reads it: the library (and the tools through it), the launcher (chorus-run), the
// launch environment (what a launcher hands each rank; src/bootstrap/environment.cpp reads
// it with the torchrun and mpirun names), or test harnesses only (declared so that they
// are never "unknown").
enum class Scope { Library, Launcher, Launch, Test };

struct Spec {
  std::string_view name;
  Type type;
  std::string_view defaultText;  // as a user would write it; empty: unset by default
  std::string_view help;         // one line
  int64_t min = INT64_MIN;       // Integer: the value; Size: bytes; Duration: milliseconds
  int64_t max = INT64_MAX;
  std::string_view choices;  // Enum: "a|b|c"; "alias=canonical" accepts a synonym
  std::string_view alias;    // NCCL's name for it, if NCCL has one
  Scope scope = Scope::Library;
  bool secret = false;            // its value is never printed
  std::string_view shownDefault;  // what the docs say when the default depends on the run
};

const std::vector<Spec>& all();
const Spec* find(std::string_view name);  // nullptr if not declared
std::string_view typeName(Type type);
std::string_view scopeName(Scope scope);

enum class Source { Default, Environment, Alias };
std::string_view sourceName(Source source);

struct Value {
  const Spec* spec = nullptr;
  Source source = Source::Default;
  std::string variable;     // the variable it came from (the alias for Source::Alias)
  std::string raw;          // as written ("" when unset)
  std::string text;         // canonical: enum choices lowered, synonyms resolved
  int64_t number = 0;       // Integer; Size in bytes; Duration in ms; Boolean 0/1
  bool overridden = false;  // both names set: the Chorus one won over the alias
};

// Where values come from: a name -> value lookup (the process environment by default).
using Environment = std::function<std::optional<std::string>(std::string_view)>;
Environment processEnvironment();

// Parses `text` as `spec` says; throws Error(InvalidArgument) naming `variable`.
Value parse(const Spec& spec, std::string_view variable, std::string_view text, Source source);
// The spec's value in `env`: the Chorus name, else the alias, else the default.
Value read(const Spec& spec, const Environment& env);

// Accessors on the process environment. The one-argument forms use the registry's
// default; the others return `fallback` when the variable is unset (a default that
// depends on the run). Unknown names are a programming error (std::logic_error).
int64_t integer(std::string_view name);
int64_t integer(std::string_view name, int64_t fallback);
size_t bytes(std::string_view name);
size_t bytes(std::string_view name, size_t fallback);
std::chrono::milliseconds duration(std::string_view name);
bool boolean(std::string_view name);
std::string text(std::string_view name);
std::string text(std::string_view name, const std::string& fallback);
// The value as getenv returns it (the alias's when that supplied it), checked; nullptr
// when unset or empty. For code that kept a `const char*` from getenv.
const char* cstr(std::string_view name);
bool isSet(std::string_view name);

// The items of a separated list, in order, empty ones kept ("a,,b" -> a, "", b; "a," -> a,
// ""); an empty text is an empty list. Callers decide what an empty item means.
std::vector<std::string> splitList(std::string_view text, char separator = ',');

// Checks every library and launch setting of `env`; throws on the first bad one. The
// process form also warns, once per process, about unknown CHORUS_* variables and about
// aliases that lost to their Chorus name, and at CHORUS_DEBUG=INFO lists what differs
// from the defaults.
void validate(const Environment& env);
void validateProcess();

// Every declared setting's value in `env` (test-harness ones left out).
std::vector<Value> snapshot(const Environment& env);

// Unknown CHORUS_* names among `names`, each with a warning naming the closest setting.
std::vector<std::string> unknownWarnings(const std::vector<std::string>& names);
std::string closestName(std::string_view name);
size_t editDistance(std::string_view a, std::string_view b);
std::vector<std::string> environmentNames();  // the names set in this process

// The README's environment table (markdown), generated from the registry.
std::string markdownTable();

// "host h, pid p": who is speaking before a rank is known.
std::string processName();

}  // namespace chorus::settings
