// The settings registry: every declared setting rejects a bad value with an error naming
// the variable, the value and what is accepted; units, aliases, typo warnings.
#include "settings/settings.hpp"
#include "settings/format.hpp"

#include <chorus/chorus.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <set>

namespace chorus::settings {
namespace {

Environment fake(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

// The error `validate` raises for `env`, or "" when it accepts it.
std::string errorFor(std::map<std::string, std::string> env) {
  try {
    validate(fake(std::move(env)));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Result::InvalidArgument);
    return e.what();
  }
  return "";
}

Value valueOf(std::string_view name, std::map<std::string, std::string> env) {
  return read(*find(name), fake(std::move(env)));
}

// Values every setting of a type must refuse (a wrong syntax, and outside the range).
std::vector<std::string> badValues(const Spec& s) {
  std::vector<std::string> bad;
  switch (s.type) {
    case Type::Integer:
      bad = {"abc", "12x", "1.5", "99999999999999999999"};
      if (s.min > INT64_MIN) bad.push_back(std::to_string(s.min - 1));
      if (s.max < INT64_MAX) bad.push_back(std::to_string(s.max + 1));
      break;
    case Type::Size:
      bad = {"abc", "12Q", "-5", "1.5M"};
      if (s.min > 0) bad.push_back(std::to_string(s.min - 1));
      bad.push_back(std::to_string(s.max) + "K");  // a thousand times the largest
      break;
    case Type::Duration:
      bad = {"abc", "30x", "-1", "s"};
      if (s.min > 0) bad.push_back(std::to_string(s.min - 1) + "ms");
      bad.push_back(std::to_string(s.max + 1) + "ms");
      break;
    case Type::Boolean:
      bad = {"maybe", "2", "-1"};
      break;
    case Type::Enum:
      bad = {"bogus", "a b"};
      break;
    case Type::List:
      bad = {"eth0;rm", "^", "a|b"};
      break;
    case Type::String:
    case Type::Path:
      bad = {std::string("a\x01z"), "tab\there"};
      break;
  }
  return bad;
}

TEST(Settings, EverySettingRejectsBadValuesNamingVariableValueAndWhatIsAccepted) {
  int checked = 0;
  for (const Spec& s : all()) {
    if (s.scope == Scope::Test) continue;
    for (const std::string& bad : badValues(s)) {
      const std::string error = errorFor({{std::string(s.name), bad}});
      SCOPED_TRACE(std::string(s.name) + "=" + bad);
      ASSERT_FALSE(error.empty()) << "accepted";
      EXPECT_NE(error.find(std::string(s.name) + "='"), std::string::npos) << error;
      if (!s.secret) EXPECT_NE(error.find("'" + bad + "'"), std::string::npos) << error;
      if (s.secret) EXPECT_EQ(error.find(bad), std::string::npos) << "a secret was printed";
      EXPECT_NE(error.find("expected " + accepted(s)), std::string::npos) << error;
      EXPECT_NE(error.find("pid "), std::string::npos) << error;  // who speaks
      ++checked;
    }
    // ... and through its NCCL alias, naming the alias and the setting it stands for.
    if (!s.alias.empty()) {
      const std::string error = errorFor({{std::string(s.alias), badValues(s).front()}});
      EXPECT_NE(error.find(std::string(s.alias) + "='"), std::string::npos) << error;
      EXPECT_NE(error.find("read as " + std::string(s.name)), std::string::npos) << error;
    }
  }
  EXPECT_GT(checked, 150);
}

TEST(Settings, SplitListKeepsEveryItemInOrderEmptyOnesToo) {
  using V = std::vector<std::string>;
  EXPECT_EQ(splitList(""), V{});
  EXPECT_EQ(splitList("eth0"), V{"eth0"});
  EXPECT_EQ(splitList("a,bb,c"), (V{"a", "bb", "c"}));
  EXPECT_EQ(splitList("a,,b"), (V{"a", "", "b"}));
  EXPECT_EQ(splitList(",a,"), (V{"", "a", ""}));
  EXPECT_EQ(splitList(","), (V{"", ""}));
  EXPECT_EQ(splitList("x+y;z", ';'), (V{"x+y", "z"}));
}

TEST(Settings, DefaultsAreValidAndEmptyMeansUnset) {
  EXPECT_EQ(errorFor({}), "");
  for (const Spec& s : all()) {
    Value v = valueOf(s.name, {{std::string(s.name), ""}});
    EXPECT_EQ(v.source, Source::Default) << s.name;
  }
}

TEST(Settings, TimeoutTakesDurationsAndRefusesText) {
  EXPECT_EQ(valueOf("CHORUS_TIMEOUT", {}).number, 300'000);
  EXPECT_EQ(valueOf("CHORUS_TIMEOUT", {{"CHORUS_TIMEOUT", "30s"}}).number, 30'000);
  EXPECT_EQ(valueOf("CHORUS_TIMEOUT", {{"CHORUS_TIMEOUT", "30"}}).number, 30'000);
  EXPECT_EQ(valueOf("CHORUS_TIMEOUT", {{"CHORUS_TIMEOUT", "1.5"}}).number, 1'500);
  EXPECT_EQ(valueOf("CHORUS_TIMEOUT", {{"CHORUS_TIMEOUT", "250ms"}}).number, 250);
  EXPECT_EQ(valueOf("CHORUS_TIMEOUT", {{"CHORUS_TIMEOUT", "2m"}}).number, 120'000);
  EXPECT_EQ(valueOf("CHORUS_TIMEOUT", {{"CHORUS_TIMEOUT", "1h"}}).number, 3'600'000);
  const std::string error = errorFor({{"CHORUS_TIMEOUT", "abc"}});
  EXPECT_NE(
      error.find("CHORUS_TIMEOUT='abc' is not accepted: expected a duration from 1ms to 720h"),
      std::string::npos)
      << error;
  EXPECT_NE(errorFor({{"CHORUS_TIMEOUT", "0"}}), "");  // no wait may be unbounded by accident
}

TEST(Settings, SizesTakeBinaryUnitsAndRangesAreEnforced) {
  EXPECT_EQ(valueOf("CHORUS_SHM_FIFO_BYTES", {}).number, 1 << 20);
  EXPECT_EQ(valueOf("CHORUS_SHM_FIFO_BYTES", {{"CHORUS_SHM_FIFO_BYTES", "64K"}}).number, 65536);
  EXPECT_EQ(valueOf("CHORUS_SHM_FIFO_BYTES", {{"CHORUS_SHM_FIFO_BYTES", "2MiB"}}).number, 2 << 20);
  EXPECT_EQ(valueOf("CHORUS_SHM_FIFO_BYTES", {{"CHORUS_SHM_FIFO_BYTES", "4096"}}).number, 4096);
  EXPECT_EQ(valueOf("CHORUS_IB_REG_CACHE", {{"CHORUS_IB_REG_CACHE", "1g"}}).number, 1 << 30);
  const std::string error = errorFor({{"CHORUS_SHM_FIFO_BYTES", "12"}});
  EXPECT_NE(error.find("CHORUS_SHM_FIFO_BYTES='12' is not accepted: expected a size from 4K to 1G"),
            std::string::npos)
      << error;
}

// Every unit spelling the parser knows, each against its value worked out here (sizes are
// binary, any case; a bare duration is seconds); and the booleans' eight words.
TEST(Settings, EverySizeDurationAndBooleanSpelling) {
  const auto size = [](const std::string& text) {
    return valueOf("CHORUS_STREAM_FROM_BYTES", {{"CHORUS_STREAM_FROM_BYTES", text}}).number;
  };
  const int64_t k = 1024;
  for (const char* unit : {"", "B", "b"}) EXPECT_EQ(size(std::string("9") + unit), 9) << unit;
  for (const char* unit : {"K", "KB", "KiB", "k", "kib"})
    EXPECT_EQ(size(std::string("7") + unit), 7 * k) << unit;
  for (const char* unit : {"M", "MB", "MiB", "m", "mb"})
    EXPECT_EQ(size(std::string("5") + unit), 5 * k * k) << unit;
  for (const char* unit : {"G", "GB", "GiB", "g"})
    EXPECT_EQ(size(std::string("3") + unit), 3 * k * k * k) << unit;
  for (const char* unit : {"T", "TB", "TiB", "t"})
    EXPECT_EQ(size(std::string("1") + unit), k * k * k * k) << unit;
  EXPECT_NE(errorFor({{"CHORUS_STREAM_FROM_BYTES", "2T"}}), "");  // past 1024G
  EXPECT_NE(errorFor({{"CHORUS_STREAM_FROM_BYTES", "5X"}}), "");
  EXPECT_NE(errorFor({{"CHORUS_STREAM_FROM_BYTES", "1.5M"}}), "");

  const auto ms = [](const std::string& text) {
    return valueOf("CHORUS_TIMEOUT", {{"CHORUS_TIMEOUT", text}}).number;
  };
  EXPECT_EQ(ms("5min"), 300'000);
  EXPECT_EQ(ms("5m"), 300'000);
  EXPECT_EQ(ms("0.5s"), 500);
  EXPECT_EQ(ms(".25"), 250);
  EXPECT_EQ(ms("1.5h"), 5'400'000);
  EXPECT_EQ(ms("720h"), 2'592'000'000);
  EXPECT_NE(errorFor({{"CHORUS_TIMEOUT", "721h"}}), "");
  EXPECT_NE(errorFor({{"CHORUS_TIMEOUT", "5 s"}}), "");
  EXPECT_NE(errorFor({{"CHORUS_TIMEOUT", "5d"}}), "");

  const auto flag = [](const std::string& text) {
    return valueOf("CHORUS_TUNE_PROBE", {{"CHORUS_TUNE_PROBE", text}}).number;
  };
  for (const char* yes : {"1", "true", "yes", "on", "True", "YES", "On"})
    EXPECT_EQ(flag(yes), 1) << yes;
  for (const char* no : {"0", "false", "no", "off", "FALSE", "No", "OFF"})
    EXPECT_EQ(flag(no), 0) << no;
  EXPECT_NE(errorFor({{"CHORUS_TUNE_PROBE", "2"}}), "");
  EXPECT_NE(errorFor({{"CHORUS_TUNE_PROBE", "maybe"}}), "");
}

TEST(Settings, IntegersBooleansEnumsAndLists) {
  EXPECT_EQ(valueOf("CHORUS_TCP_STREAMS", {{"CHORUS_TCP_STREAMS", "16"}}).number, 16);
  EXPECT_EQ(valueOf("CHORUS_IB_GID_INDEX", {}).number, -1);
  EXPECT_EQ(valueOf("CHORUS_TUNE_PROBE", {{"CHORUS_TUNE_PROBE", "off"}}).number, 0);
  EXPECT_EQ(valueOf("CHORUS_TUNE_PROBE", {{"CHORUS_TUNE_PROBE", "TRUE"}}).text, "1");
  EXPECT_EQ(valueOf("CHORUS_TRANSPORT", {{"CHORUS_TRANSPORT", "TCP"}}).text, "tcp");
  EXPECT_EQ(valueOf("CHORUS_DEBUG", {{"CHORUS_DEBUG", "info"}}).text, "INFO");
  EXPECT_EQ(valueOf("CHORUS_SOCKET_IFNAME", {{"CHORUS_SOCKET_IFNAME", "^docker,lo"}}).text,
            "^docker,lo");
  EXPECT_EQ(valueOf("CHORUS_IB_HCA", {{"CHORUS_IB_HCA", "=mlx5_0:1,mlx5_1"}}).text,
            "=mlx5_0:1,mlx5_1");
  EXPECT_EQ(valueOf("CHORUS_ALGO", {{"CHORUS_ALGO", "allreduce:^ring,broadcast:tree"}}).text,
            "allreduce:^ring,broadcast:tree");
}

TEST(Settings, NcclAliasesAreReadAndTheChorusNameWins) {
  Value v = valueOf("CHORUS_DEBUG", {{"NCCL_DEBUG", "INFO"}});
  EXPECT_EQ(v.source, Source::Alias);
  EXPECT_EQ(v.variable, "NCCL_DEBUG");
  EXPECT_EQ(v.text, "INFO");
  v = valueOf("CHORUS_DEBUG", {{"NCCL_DEBUG", "INFO"}, {"CHORUS_DEBUG", "TRACE"}});
  EXPECT_EQ(v.source, Source::Environment);
  EXPECT_EQ(v.text, "TRACE");
  EXPECT_TRUE(v.overridden);
  EXPECT_EQ(valueOf("CHORUS_NET", {{"NCCL_NET", "Socket"}}).text, "tcp");
  EXPECT_EQ(valueOf("CHORUS_NET", {{"NCCL_NET", "IB"}}).text, "ib");
  EXPECT_EQ(valueOf("CHORUS_IB_TIMEOUT", {{"NCCL_IB_TIMEOUT", "22"}}).number, 22);
  // Every NCCL name the drop-in issue lists maps onto a setting.
  std::set<std::string> aliases;
  for (const Spec& s : all())
    if (!s.alias.empty()) aliases.insert(std::string(s.alias));
  for (const char* nccl :
       {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_GID_INDEX",
        "NCCL_IB_TC", "NCCL_IB_SL", "NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_TIMEOUT",
        "NCCL_IB_RETRY_CNT", "NCCL_ALGO", "NCCL_COMM_ID", "NCCL_NET"})
    EXPECT_TRUE(aliases.count(nccl)) << nccl;
}

TEST(Settings, TyposGetAWarningNamingTheClosestSetting) {
  EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(editDistance("", "abc"), 3u);
  EXPECT_EQ(closestName("CHORUS_TIMOUT"), "CHORUS_TIMEOUT");
  EXPECT_EQ(closestName("CHORUS_TCP_STREAM"), "CHORUS_TCP_STREAMS");
  auto warnings = unknownWarnings(
      {"PATH", "CHORUS_TIMOUT", "CHORUS_TIMEOUT", "NCCL_WHATEVER", "CHORUS_ZZZZZZZZZZZZZZZZZZZZZ"});
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0],
            "CHORUS_TIMOUT is not a Chorus setting and is ignored; did you mean CHORUS_TIMEOUT?");
  EXPECT_NE(warnings[1].find("CHORUS_ZZZZZZZZZZZZZZZZZZZZZ is not a Chorus setting"),
            std::string::npos);
  EXPECT_NE(warnings[1].find("no setting has a similar name"), std::string::npos);
}

TEST(Settings, RegistryIsWellFormed) {
  std::set<std::string_view> names;
  for (const Spec& s : all()) {
    EXPECT_TRUE(names.insert(s.name).second) << "declared twice: " << s.name;
    EXPECT_EQ(s.name.rfind("CHORUS_", 0), 0u) << s.name;
    EXPECT_TRUE(s.alias.empty() || s.alias.rfind("NCCL_", 0) == 0) << s.name;
    EXPECT_FALSE(s.help.empty()) << s.name;
    EXPECT_EQ(s.help.find('|'), std::string_view::npos) << "breaks the markdown table: " << s.name;
    EXPECT_EQ(s.type == Type::Enum, !s.choices.empty()) << s.name;
  }
}

// The accessors read the process environment when called, and check what they read.
TEST(Settings, ProcessAccessorsReadAndCheck) {
  ::unsetenv("CHORUS_TCP_STREAMS");
  EXPECT_EQ(integer("CHORUS_TCP_STREAMS"), 2);
  EXPECT_FALSE(isSet("CHORUS_TCP_STREAMS"));
  ::setenv("CHORUS_TCP_STREAMS", "3", 1);
  EXPECT_EQ(integer("CHORUS_TCP_STREAMS"), 3);
  EXPECT_TRUE(isSet("CHORUS_TCP_STREAMS"));
  ::setenv("CHORUS_TCP_STREAMS", "17", 1);
  EXPECT_THROW(integer("CHORUS_TCP_STREAMS"), Error);
  EXPECT_THROW(validateProcess(), Error);
  ::unsetenv("CHORUS_TCP_STREAMS");
  EXPECT_EQ(cstr("CHORUS_REPORT_DIR"), nullptr);
  EXPECT_EQ(integer("CHORUS_SPIN_US", 77), 77);  // a run-dependent default
  EXPECT_EQ(duration("CHORUS_RUN_GRACE"), std::chrono::seconds(15));
  EXPECT_THROW(integer("CHORUS_NOT_DECLARED"), std::logic_error);
}

TEST(Settings, MarkdownTableListsEverySettingUsersSet) {
  const std::string table = markdownTable();
  for (const Spec& s : all()) {
    const bool listed = table.find("`" + std::string(s.name) + "`") != std::string::npos;
    EXPECT_EQ(listed, s.scope != Scope::Test) << s.name;
  }
  EXPECT_NE(table.find("| `CHORUS_SHM_FIFO_BYTES` | size | `1M` | 4K...1G |"), std::string::npos);
}

}  // namespace
}  // namespace chorus::settings

namespace chorus {
namespace {

// Restores the named variables when it goes out of scope.
class SavedEnv {
 public:
  explicit SavedEnv(std::vector<std::string> names) : names_(std::move(names)) {
    for (const auto& n : names_)
      if (const char* v = std::getenv(n.c_str())) saved_[n] = v;
  }
  ~SavedEnv() {
    for (const auto& n : names_) {
      auto it = saved_.find(n);
      if (it == saved_.end())
        ::unsetenv(n.c_str());
      else
        ::setenv(n.c_str(), it->second.c_str(), 1);
    }
  }

 private:
  std::vector<std::string> names_;
  std::map<std::string, std::string> saved_;
};

std::string initError(bool fromEnv) {
  try {
    if (fromEnv)
      Communicator::initFromEnv();
    else
      Communicator::init(0, 1, getUniqueId());
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Result::InvalidArgument);
    return e.what();
  }
  return "";
}

TEST(SettingsAtCreation, BadValueFailsCommunicatorCreationNamingIt) {
  SavedEnv saved({"CHORUS_TIMEOUT", "CHORUS_SHM_FIFO_BYTES"});
  ::setenv("CHORUS_TIMEOUT", "abc", 1);
  std::string error = initError(false);
  EXPECT_NE(error.find("CHORUS_TIMEOUT='abc' is not accepted: expected a duration"),
            std::string::npos)
      << error;
  ::unsetenv("CHORUS_TIMEOUT");
  ::setenv("CHORUS_SHM_FIFO_BYTES", "12", 1);
  error = initError(true);
  EXPECT_NE(error.find("CHORUS_SHM_FIFO_BYTES='12' is not accepted: expected a size from 4K to 1G"),
            std::string::npos)
      << error;
}

TEST(SettingsAtCreation, ErrorBeforeTheRankIsKnownNamesHostAndPidAndWhatToSet) {
  const std::vector<std::string> launch = {"CHORUS_RANK", "RANK", "OMPI_COMM_WORLD_RANK",
                                           "CHORUS_WORLD_SIZE", "WORLD_SIZE"};
  SavedEnv saved(launch);
  for (const auto& n : launch) ::unsetenv(n.c_str());
  const std::string error = initError(true);
  EXPECT_EQ(error.rfind("host ", 0), 0u) << error;
  EXPECT_NE(error.find("pid " + std::to_string(::getpid()) + ": "), std::string::npos) << error;
  EXPECT_NE(error.find("set CHORUS_RANK, CHORUS_WORLD_SIZE"), std::string::npos) << error;
  EXPECT_EQ(error.find("-1"), std::string::npos) << error;
}

}  // namespace
}  // namespace chorus
