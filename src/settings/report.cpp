// Checking the whole environment at once: bad values, unknown CHORUS_* names (with the
// closest real one), aliases that lost to their Chorus name, the non-default list at
// CHORUS_DEBUG=INFO, and the README's table.
#include "settings/format.hpp"
#include "settings/settings.hpp"

#include "log.hpp"

#include <unistd.h>  // environ (glibc declares it with _GNU_SOURCE, which g++ defines)

#include <algorithm>
#include <mutex>
#include <numeric>

namespace chorus::settings {

void validate(const Environment& env) {
  for (const Spec& s : all())
    if (s.scope != Scope::Test) read(s, env);
}

std::vector<Value> snapshot(const Environment& env) {
  std::vector<Value> values;
  for (const Spec& s : all())
    if (s.scope != Scope::Test) values.push_back(read(s, env));
  return values;
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closestName(std::string_view name) {
  std::string_view best;
  size_t bestDistance = SIZE_MAX;
  for (const Spec& s : all()) {
    const size_t d = editDistance(name, s.name);
    if (d < bestDistance) bestDistance = d, best = s.name;
  }
  return std::string(best);
}

std::vector<std::string> unknownWarnings(const std::vector<std::string>& names) {
  std::vector<std::string> warnings;
  for (const std::string& name : names) {
    if (name.rfind("CHORUS_", 0) != 0 || find(name)) continue;
    const std::string closest = closestName(name);
    // Close enough to be a typo: a few edits, fewer than a third of the name.
    const size_t d = editDistance(name, closest);
    std::string w = name + " is not a Chorus setting and is ignored; ";
    w += d <= std::max<size_t>(2, name.size() / 3)
             ? "did you mean " + closest + "?"
             : "no setting has a similar name (chorus-info lists them all)";
    warnings.push_back(std::move(w));
  }
  return warnings;
}

std::vector<std::string> environmentNames() {
  std::vector<std::string> names;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    names.emplace_back(entry.substr(0, entry.find('=')));
  }
  return names;
}

void validateProcess() {
  static std::once_flag warned, listed;
  std::call_once(warned, [] {
    for (const std::string& w : unknownWarnings(environmentNames()))
      logf(LogLevel::Warn, "%s", w.c_str());
  });
  const Environment env = processEnvironment();
  validate(env);  // throws on the first bad value
  std::call_once(listed, [&env] {
    for (const Value& v : snapshot(env)) {
      const std::string name(v.spec->name);
      if (v.overridden) {
        const std::string alias = env(v.spec->alias).value_or("");
        logf(alias == v.raw ? LogLevel::Info : LogLevel::Warn, "%s=%s wins over %s=%s",
             name.c_str(), shownValue(v).c_str(), std::string(v.spec->alias).c_str(),
             v.spec->secret ? "<secret>" : alias.c_str());
      }
      if (v.source != Source::Default && v.spec->scope != Scope::Launch)
        logf(LogLevel::Info, "setting %s=%s (%s%s)", name.c_str(), shownValue(v).c_str(),
             std::string(sourceName(v.source)).c_str(),
             v.source == Source::Alias ? (" " + v.variable).c_str() : "");
    }
  });
}

std::string markdownTable() {
  auto table = [](auto keep) {
    std::string out = "| variable | type | default | accepted | meaning |\n|---|---|---|---|---|\n";
    for (const Spec& s : all()) {
      if (!keep(s.scope)) continue;
      std::string name = "`" + std::string(s.name) + "`";
      if (!s.alias.empty()) name += " (`" + std::string(s.alias) + "`)";
      out += "| " + name + " | " + std::string(typeName(s.type)) + " | " + shownDefault(s) + " | " +
             acceptedShort(s) + " | " + std::string(s.help) + " |\n";
    }
    return out;
  };
  return table([](Scope s) { return s == Scope::Library || s == Scope::Launcher; }) +
         "\nSet by the launcher for each rank (chorus-run sets them all; torchrun and mpirun "
         "names also work):\n\n" +
         table([](Scope s) { return s == Scope::Launch; });
}

}  // namespace chorus::settings
