// Runs the chorus-info binary in a controlled environment and parses both its forms: the
// JSON (with nlohmann) and the text (by columns), checking values, sources and exit status.
#include "../common/process_support.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

namespace {

using chorus::test_support::runCommand;
using Output = chorus::test_support::CommandResult;

// Runs `program args` with exactly `env` (plus PATH), so the test machine's variables
// cannot leak in; `streams` says where stderr goes.
Output withOnly(const std::string& env, const std::string& program, const std::string& args,
                const char* streams = "2>&1") {
  return runCommand("env -i PATH=/usr/bin:/bin " + env + " " + program + " " + args + " " +
                    streams);
}

// chorus-info's stdout alone (its warnings would break the JSON).
Output chorusInfo(const std::string& args, const std::string& env) {
  return withOnly(env, CHORUS_INFO_PATH, args, "2>/dev/null");
}

nlohmann::json settingNamed(const nlohmann::json& doc, const std::string& name) {
  for (const auto& s : doc.at("settings"))
    if (s.at("name") == name) return s;
  ADD_FAILURE() << name << " not listed";
  return {};
}

// The text form's settings section: name -> {value, source}.
std::map<std::string, std::pair<std::string, std::string>> textSettings(const std::string& out) {
  std::map<std::string, std::pair<std::string, std::string>> rows;
  std::istringstream in(out);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("Settings (", 0) == 0) {
      inside = true;
      continue;
    }
    if (!inside || line.rfind("  CHORUS_", 0) != 0) continue;
    std::istringstream fields(line);
    std::string name, value, source;
    fields >> name >> value >> source;
    rows[name] = {value, source};
  }
  return rows;
}

const char* kEnv =
    "CHORUS_TIMEOUT=30s NCCL_DEBUG=info CHORUS_TIMOUT=5 CHORUS_JOB_SECRET=hunter2 "
    "NCCL_IB_TC=96 CHORUS_IB_TC=41";

TEST(ChorusInfo, JsonFormParsesAndShowsValuesAndSources) {
  Output run = chorusInfo("--json", kEnv);
  ASSERT_EQ(run.status, 0) << run.out;
  const nlohmann::json doc = nlohmann::json::parse(run.out);  // throws if not JSON
  EXPECT_FALSE(doc.at("version").get<std::string>().empty());

  auto timeout = settingNamed(doc, "CHORUS_TIMEOUT");
  EXPECT_EQ(timeout.at("value"), "30s");
  EXPECT_EQ(timeout.at("source"), "environment");
  EXPECT_EQ(timeout.at("type"), "duration");
  auto debug = settingNamed(doc, "CHORUS_DEBUG");
  EXPECT_EQ(debug.at("value"), "INFO");
  EXPECT_EQ(debug.at("source"), "alias");
  EXPECT_EQ(debug.at("variable"), "NCCL_DEBUG");
  auto tc = settingNamed(doc, "CHORUS_IB_TC");  // both set: the Chorus name wins
  EXPECT_EQ(tc.at("value"), "41");
  EXPECT_EQ(tc.at("source"), "environment");
  auto streams = settingNamed(doc, "CHORUS_TCP_STREAMS");
  EXPECT_EQ(streams.at("value"), "2");
  EXPECT_EQ(streams.at("source"), "default");
  EXPECT_FALSE(streams.at("help").get<std::string>().empty());
  EXPECT_EQ(settingNamed(doc, "CHORUS_JOB_SECRET").at("value"), "<secret>");
  EXPECT_EQ(run.out.find("hunter2"), std::string::npos) << "a secret was printed";

  ASSERT_EQ(doc.at("warnings").size(), 1u);
  EXPECT_NE(doc.at("warnings")[0].get<std::string>().find("did you mean CHORUS_TIMEOUT?"),
            std::string::npos);
  std::vector<std::string> transports;
  for (const auto& t : doc.at("transports")) {
    transports.push_back(t.at("name"));
    EXPECT_TRUE(t.at("available").is_boolean());
    EXPECT_FALSE(t.at("detail").get<std::string>().empty());
  }
  EXPECT_EQ(transports, (std::vector<std::string>{"shm", "tcp", "ib", "ucx"}));
  EXPECT_EQ(doc.at("build").size(), 4u);
  EXPECT_FALSE(doc.at("topology").at("summary").get<std::string>().empty());
}

TEST(ChorusInfo, TextFormListsTheSameValues) {
  Output run = chorusInfo("", kEnv);
  ASSERT_EQ(run.status, 0) << run.out;
  auto rows = textSettings(run.out);
  EXPECT_EQ(rows["CHORUS_TIMEOUT"], (std::pair<std::string, std::string>{"30s", "environment"}));
  EXPECT_EQ(rows["CHORUS_DEBUG"], (std::pair<std::string, std::string>{"INFO", "alias"}));
  EXPECT_EQ(rows["CHORUS_IB_TC"], (std::pair<std::string, std::string>{"41", "environment"}));
  EXPECT_EQ(rows["CHORUS_TCP_STREAMS"], (std::pair<std::string, std::string>{"2", "default"}));
  EXPECT_GE(rows.size(), 40u);
  EXPECT_NE(run.out.find("warning: CHORUS_TIMOUT is not a Chorus setting"), std::string::npos);
  EXPECT_NE(run.out.find("Transports on this host:\n  shm"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("hunter2"), std::string::npos);
}

TEST(ChorusInfo, BadValueIsListedWithItsErrorAndExitsOne) {
  Output run = chorusInfo("--json", "CHORUS_SHM_FIFO_BYTES=12");
  EXPECT_EQ(run.status, 1);
  const nlohmann::json doc = nlohmann::json::parse(run.out);
  auto fifo = settingNamed(doc, "CHORUS_SHM_FIFO_BYTES");
  EXPECT_EQ(fifo.at("source"), "invalid");
  EXPECT_NE(fifo.at("error").get<std::string>().find(
                "CHORUS_SHM_FIFO_BYTES='12' is not accepted: expected a size from 4K to 1G"),
            std::string::npos);
  EXPECT_EQ(chorusInfo("--bogus", "").status, 2);
}

}  // namespace

#ifdef CHORUS_PERF_PATH
namespace {

// The settings as the programs see them: chorus-run and chorus-perf refuse a bad value,
// and CHORUS_DEBUG=INFO lists what differs from the defaults when a communicator starts.
Output launch(const std::string& env, const std::string& program) {
  return withOnly(env, CHORUS_RUN_PATH, "-n 2 --timeout 120 " + program);
}

const std::string kPerf = std::string(CHORUS_PERF_PATH) + " -b 8 -e 8 -n 1 -w 0 -c 1";

TEST(SettingsEndToEnd, InfoListsNonDefaultSettingsAndTyposAtCreation) {
  Output run = launch(
      "CHORUS_DEBUG=INFO CHORUS_TCP_STREAMS=3 NCCL_IB_TC=5 CHORUS_TIMOUT=1 "
      "CHORUS_TUNE_PROBE=0",
      kPerf);
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("CHORUS INFO setting CHORUS_TCP_STREAMS=3 (environment)"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("CHORUS INFO setting CHORUS_IB_TC=5 (alias NCCL_IB_TC)"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("CHORUS WARN CHORUS_TIMOUT is not a Chorus setting and is ignored; did "
                         "you mean CHORUS_TIMEOUT?"),
            std::string::npos)
      << run.out;
  EXPECT_EQ(run.out.find("setting CHORUS_TIMEOUT="), std::string::npos) << "a default was listed";
  // The launcher's per-rank variables (scope Launch: CHORUS_RANK, ...) are not settings the
  // user chose: not listed.
  EXPECT_EQ(run.out.find("setting CHORUS_RANK="), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("setting CHORUS_WORLD_SIZE="), std::string::npos) << run.out;
}

// Both names set: the CHORUS_ one wins, a warning when the values differ, INFO when not.
TEST(SettingsEndToEnd, TheChorusNameWinsOverTheNcclAliasAndSaysSo) {
  Output run = launch("CHORUS_IB_TC=4 NCCL_IB_TC=5 CHORUS_TUNE_PROBE=0", kPerf);
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("CHORUS WARN CHORUS_IB_TC=4 wins over NCCL_IB_TC=5"), std::string::npos)
      << run.out;
  run = launch("CHORUS_DEBUG=INFO CHORUS_IB_TC=4 NCCL_IB_TC=4 CHORUS_TUNE_PROBE=0", kPerf);
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("CHORUS INFO CHORUS_IB_TC=4 wins over NCCL_IB_TC=4"), std::string::npos)
      << run.out;
  EXPECT_EQ(run.out.find("CHORUS WARN CHORUS_IB_TC"), std::string::npos) << run.out;
}

TEST(SettingsEndToEnd, LauncherAndBenchmarkRefuseABadValue) {
  Output run = launch("CHORUS_TIMEOUT=abc", kPerf);
  EXPECT_EQ(run.status, 2) << run.out;  // chorus-run's own check, before any rank starts
  EXPECT_NE(run.out.find("chorus-run: host "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("CHORUS_TIMEOUT='abc' is not accepted: expected a duration"),
            std::string::npos)
      << run.out;
  // chorus-perf alone (its modes that start no communicator check too).
  run = withOnly("CHORUS_SHM_FIFO_BYTES=12", CHORUS_PERF_PATH, "--explain 4 --link shm");
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_NE(
      run.out.find("CHORUS_SHM_FIFO_BYTES='12' is not accepted: expected a size from 4K to 1G"),
      std::string::npos)
      << run.out;
}

}  // namespace
#endif
