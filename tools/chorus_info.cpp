// chorus-info: what this Chorus was built with, what this host offers it, and every
// setting with its value, where the value came from and its help line (as ompi_info and
// ucx_info -c do). --json for scripts; --markdown prints the README's environment table.
// Exit status 1 when a setting has a bad value (it is still listed, with the error).
#include "info/host_info.hpp"
#include "settings/format.hpp"
#include "settings/settings.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

using namespace chorus;
using Json = nlohmann::ordered_json;

constexpr const char* kUsage =
    "usage: chorus-info [--json | --markdown]\n"
    "  (none)      build options, topology, transports and every setting, as text\n"
    "  --json      the same as one JSON object\n"
    "  --markdown  the environment table of the README, generated from the settings registry\n";

// One setting as the environment gives it, or the error its value raises.
struct Row {
  settings::Value value;
  std::string error;
};

std::vector<Row> settingRows() {
  std::vector<Row> rows;
  const settings::Environment env = settings::processEnvironment();
  for (const settings::Spec& spec : settings::all()) {
    if (spec.scope == settings::Scope::Test) continue;
    Row row;
    try {
      row.value = settings::read(spec, env);
    } catch (const std::exception& e) {
      row.value.spec = &spec;
      const bool own = env(spec.name).has_value();
      row.value.source = own ? settings::Source::Environment : settings::Source::Alias;
      row.value.variable = std::string(own ? spec.name : spec.alias);
      row.error = e.what();
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string sourceOf(const Row& r) {
  if (!r.error.empty()) return "invalid";
  return std::string(settings::sourceName(r.value.source));
}

Json toJson(const info::HostInfo& h, const std::vector<Row>& rows,
            const std::vector<std::string>& warnings) {
  Json j;
  j["version"] = h.version;
  auto features = [](const std::vector<info::Feature>& list) {
    Json out = Json::array();
    for (const auto& f : list)
      out.push_back({{"name", f.name}, {"available", f.available}, {"detail", f.detail}});
    return out;
  };
  j["build"] = features(h.build);
  j["kernels"] = {{"isas", features(h.kernels)}, {"active", h.activeKernels}};
  j["topology"] = {{"summary", h.topologySummary}, {"gpus", h.gpus}};
  j["transports"] = features(h.transports);
  Json list = Json::array();
  for (const Row& r : rows) {
    const settings::Spec& s = *r.value.spec;
    Json e = {{"name", std::string(s.name)},
              {"value", r.error.empty() ? settings::shownValue(r.value) : ""},
              {"source", sourceOf(r)},
              {"variable", r.value.variable},
              {"type", std::string(settings::typeName(s.type))},
              {"default", settings::shownDefault(s)},
              {"accepted", settings::accepted(s)},
              {"alias", std::string(s.alias)},
              {"scope", std::string(settings::scopeName(s.scope))},
              {"help", std::string(s.help)}};
    if (!r.error.empty()) e["error"] = r.error;
    list.push_back(std::move(e));
  }
  j["settings"] = std::move(list);
  j["warnings"] = warnings;
  return j;
}

void printText(const info::HostInfo& h, const std::vector<Row>& rows,
               const std::vector<std::string>& warnings) {
  std::printf("Chorus %s\n\nBuild options:\n", h.version.c_str());
  for (const auto& f : h.build)
    std::printf("  %-8s %-4s %s\n", f.name.c_str(), f.available ? "yes" : "no", f.detail.c_str());
  std::printf("\nReduction kernels (active: %s):\n", h.activeKernels.c_str());
  for (const auto& f : h.kernels)
    std::printf("  %-8s %-4s %s\n", f.name.c_str(), f.available ? "yes" : "no", f.detail.c_str());
  std::printf("\nTopology: %s\n\nTransports on this host:\n", h.topologySummary.c_str());
  for (const auto& f : h.transports)
    std::printf("  %-8s %-4s %s\n", f.name.c_str(), f.available ? "yes" : "no", f.detail.c_str());
  std::printf("\nSettings (value, source, help):\n");
  for (const Row& r : rows) {
    const settings::Spec& s = *r.value.spec;
    std::string value = r.error.empty() ? settings::shownValue(r.value) : "INVALID";
    std::string source = sourceOf(r);
    if (r.value.source == settings::Source::Alias) source += " " + r.value.variable;
    std::printf("  %-30s %-14s %-12s %s\n", std::string(s.name).c_str(), value.c_str(),
                source.c_str(), std::string(s.help).c_str());
    if (!r.error.empty()) std::printf("      error: %s\n", r.error.c_str());
  }
  for (const std::string& w : warnings) std::printf("\nwarning: %s\n", w.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  enum class Form { Text, Json, Markdown } form = Form::Text;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json")) {
      form = Form::Json;
    } else if (!std::strcmp(argv[i], "--markdown")) {
      form = Form::Markdown;
    } else if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "chorus-info: unknown argument '%s'\n%s", argv[i], kUsage);
      return 2;
    }
  }
  if (form == Form::Markdown) {
    std::fputs(settings::markdownTable().c_str(), stdout);
    return 0;
  }
  const std::vector<Row> rows = settingRows();
  const std::vector<std::string> warnings = settings::unknownWarnings(settings::environmentNames());
  const info::HostInfo host = info::hostInfo();
  if (form == Form::Json)
    std::printf("%s\n", toJson(host, rows, warnings).dump(2).c_str());
  else
    printText(host, rows, warnings);
  for (const Row& r : rows)
    if (!r.error.empty()) return 1;
  return 0;
}
