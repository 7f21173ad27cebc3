// CHORUS_KEEPALIVE's one decision for both ends of UCX's tcp connections
// (transports/ucx/ucx_keepalive.hpp): the accepting end's times are Chorus's where the user
// set nothing, else the user's UCX_TCP_<name> read as UCX reads it. Built with UCX only.
#ifdef CHORUS_HAVE_UCX
#include "transports/ucx/ucx_keepalive.hpp"

#include <gtest/gtest.h>

#include <ostream>

using namespace chorus;
using namespace chorus::ucx;
using namespace std::chrono_literals;

namespace {

// Chorus's times for 8 s (idle 4 s, every 1 s, 4 probes), with the user's where not null.
TcpKeepalive withUsers(const char* idle, const char* interval, const char* count) {
  return {{{{"KEEPIDLE", 4, idle}, {"KEEPINTVL", 1, interval}, {"KEEPCNT", 4, count}}}};
}

std::optional<std::array<int, 3>> times(const TcpKeepalive& k) {
  const auto t = acceptedTimes(k);
  if (!t) return std::nullopt;
  return std::array<int, 3>{t->idleSeconds, t->intervalSeconds, t->probes};
}

}  // namespace

TEST(UcxKeepalive, AcceptingEndTakesChorusTimesWhereTheUserSetNone) {
  EXPECT_EQ(times(withUsers(nullptr, nullptr, nullptr)), (std::array<int, 3>{4, 1, 4}));
}

TEST(UcxKeepalive, AcceptingEndTakesTheUsersValueAsUcxReadsIt) {
  EXPECT_EQ(times(withUsers("60s", nullptr, nullptr)), (std::array<int, 3>{60, 1, 4}));
  EXPECT_EQ(times(withUsers("1m", "2.9s", "3")), (std::array<int, 3>{60, 2, 3}));
  EXPECT_EQ(times(withUsers("90", "1500ms", nullptr)), (std::array<int, 3>{90, 1, 4}));
  EXPECT_EQ(times(withUsers("500ms", nullptr, nullptr)), (std::array<int, 3>{1, 1, 4}));
  // auto: UCX leaves the kernel's (0: keepaliveOn keeps it).
  EXPECT_EQ(times(withUsers("auto", "auto", "auto")), (std::array<int, 3>{0, 0, 0}));
}

TEST(UcxKeepalive, AcceptingEndGetsNoneWhereTheUserTurnsItOffOrWroteWhatUcxWouldNotRead) {
  EXPECT_EQ(times(withUsers("inf", nullptr, nullptr)), std::nullopt);
  EXPECT_EQ(times(withUsers(nullptr, nullptr, "inf")), std::nullopt);
  EXPECT_EQ(times(withUsers("10 parsecs", nullptr, nullptr)), std::nullopt);
  EXPECT_EQ(times(withUsers(nullptr, nullptr, "3s")), std::nullopt);  // a count has no unit
}

TEST(UcxKeepalive, NothingForZeroOrAContextWithoutTcp) {
  EXPECT_FALSE(tcpKeepalive("", 0ms));
  EXPECT_FALSE(tcpKeepalive("mlx5_0:1", 8s));  // RDMA devices only
}
#endif
