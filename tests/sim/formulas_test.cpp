// The replay against the alpha-beta-gamma cost formulas of ring, recursive doubling and
// recursive halving-doubling all-reduce (Thakur, Rabenseifner, Gropp 2005) on a uniform
// network. Each term of the replayed time is measured on its own: a network where only
// latency costs (alpha = 1 us, free wire and reduction) gives the steps on the critical
// path; only the wire (1 B/us) the bytes sent along it; only the reduction (1 B/us) the
// bytes reduced along it. Messages stay within one pipeline slice, so nothing overlaps
// and the formulas hold exactly (integers in doubles: compared with ==): ring at every p
// 2..1024, rd and rhd at every power of two. Every p 2..1024 also checks the schedules'
// own terms (rounds, bytes sent and reduced by the busiest rank).
//
// Not the textbook for rd at p not a power of two: the replay is asynchronous. With few
// extra ranks their fold overlaps the partners' first exchange (lg p' + 1 latencies on the
// critical path, not + 2), and a folding rank's one ingress port takes the fold and its
// first exchange together (up to one more n on the wire path). Checked as bounds there.
#include "../common/algorithm_lookup.hpp"
#include "../common/schedule_terms.hpp"
#include "algorithms/schedule_rules.hpp"
#include "sim/simulate.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

namespace chorus::sim {
namespace {

const double kFree = std::numeric_limits<double>::infinity();
// The call's header goes with the first message to each peer (rule 5 of
// algorithms/schedule_rules.hpp): on the wire path once per new partner.
const double kHeader = rules::kCallHeaderBytes;

struct Terms {
  double steps, bytesSent, bytesReduced;
};

Terms measure(const char* name, int p, size_t count) {
  const Algorithm* a = &test::allReduce(name);
  auto run = [&](LinkModel link) {
    LinkClassNetwork net(p, link);
    const SimResult r = simulate(*a, Collective::AllReduce, p, count, 4, net);
    EXPECT_FALSE(r.deadlock) << name << " p=" << p;
    return r.micros;
  };
  return {run({1, kFree, kFree, kFree, 0}), run({0, 1, kFree, kFree, 0}),
          run({0, kFree, 1, kFree, 0})};
}

int floorPof2(int p) {
  int q = 1;
  while (q * 2 <= p) q *= 2;
  return q;
}
int log2Of(int q) {
  int l = 0;
  while ((1 << l) < q) ++l;
  return l;
}

std::vector<int> ranksToCheck() {
  std::vector<int> ps;
  for (int p = 2; p <= 130; ++p) ps.push_back(p);
  for (int p : {191, 255, 256, 257, 384, 511, 512, 513, 700, 1000, 1023, 1024}) ps.push_back(p);
  return ps;
}

// Ring: 2(p-1) steps, 2(p-1)/p n sent, (p-1)/p n reduced (chunks of 64 elements).
TEST(SimFormulas, RingAllReduce) {
  for (int p = 2; p <= 1024; ++p) {
    const size_t count = 64 * size_t(p);
    const double n = count * 4.0;
    const Terms t = measure("ring", p, count);
    EXPECT_EQ(t.steps, 2.0 * (p - 1)) << p;
    EXPECT_EQ(t.bytesSent, 2.0 * (p - 1) * n / p + kHeader) << p;  // one peer: one header
    EXPECT_EQ(t.bytesReduced, (p - 1) * n / p) << p;
  }
}

// The schedules' own terms, busiest rank: message rounds (a send and the receive right
// after it are one round), bytes sent, bytes reduced.
Terms scheduleTerms(const char* name, int p, size_t count) {
  const test::ScheduleTerms t = test::busiestTerms(test::allReduce(name), p, count);
  return {double(t.rounds), t.elementsSent * 4.0, t.elementsReduced * 4.0};
}

// Recursive doubling: lg p rounds of the whole vector, each reduced. p not a power of two
// (p' the largest below): the extra ranks fold in first and get the result last.
TEST(SimFormulas, RecursiveDoublingAllReduce) {
  const size_t count = 1024;
  const double n = count * 4.0;
  for (int p : ranksToCheck()) {
    const int q = floorPof2(p), lg = log2Of(q);
    const bool fold = p != q;
    const Terms s = scheduleTerms("rd", p, count);
    EXPECT_EQ(s.steps, lg + (fold ? 2 : 0)) << p;
    EXPECT_EQ(s.bytesSent, (lg + (fold ? 1 : 0)) * n) << p;
    EXPECT_EQ(s.bytesReduced, (lg + (fold ? 1 : 0)) * n) << p;
    const Terms t = measure("rd", p, count);
    EXPECT_EQ(t.bytesReduced, (lg + (fold ? 1 : 0)) * n) << p;
    if (!fold) {
      EXPECT_EQ(t.steps, lg) << p;
      EXPECT_EQ(t.bytesSent, lg * (n + kHeader)) << p;  // a new partner every round
    } else {                                            // asynchronous: see the top of the file
      EXPECT_GE(t.steps, lg + 1) << p;
      EXPECT_LE(t.steps, lg + 2) << p;
      EXPECT_GE(t.bytesSent, (lg + 2) * (n + kHeader)) << p;
      EXPECT_LE(t.bytesSent, (lg + 3) * (n + kHeader)) << p;
    }
  }
}

// Halving-doubling (Rabenseifner): 2 lg p rounds, 2 (p-1)/p n sent, (p-1)/p n reduced;
// p not a power of two: + 2 rounds, + 2n on the critical path (n sent by a rank), + n
// reduced (the fold).
TEST(SimFormulas, HalvingDoublingAllReduce) {
  for (int p : ranksToCheck()) {
    const int q = floorPof2(p), lg = log2Of(q);
    const size_t count = 16 * size_t(q);
    const double n = count * 4.0;
    const bool fold = p != q;
    const Terms s = scheduleTerms("rhd", p, count);
    EXPECT_EQ(s.steps, 2 * lg + (fold ? 2 : 0)) << p;
    EXPECT_EQ(s.bytesSent, 2.0 * (q - 1) * n / q + (fold ? n : 0)) << p;
    EXPECT_EQ(s.bytesReduced, (q - 1) * n / q + (fold ? n : 0)) << p;
    const Terms t = measure("rhd", p, count);
    EXPECT_EQ(t.steps, 2 * lg + (fold ? 2 : 0)) << p;
    // The halving's lg partners are the doubling's: lg headers. With a fold (+ 2 messages)
    // the asynchronous critical path may pick up other ranks' first messages (seen at
    // p = 2^k + 1 and + 2): between lg + 2 headers and one on each of its 2 lg + 2 messages.
    const double wire = 2.0 * (q - 1) * n / q + (fold ? 2 * n : 0);
    if (!fold) {
      EXPECT_EQ(t.bytesSent, wire + lg * kHeader) << p;
    } else {
      EXPECT_GE(t.bytesSent, wire + (lg + 2) * kHeader) << p;
      EXPECT_LE(t.bytesSent, wire + (2 * lg + 2) * kHeader) << p;
    }
    EXPECT_EQ(t.bytesReduced, (q - 1) * n / q + (fold ? n : 0)) << p;
  }
}

// Ring's schedule terms: 2(p-1) rounds, 2(p-1)/p n sent, (p-1)/p n reduced.
TEST(SimFormulas, RingScheduleTerms) {
  for (int p : ranksToCheck()) {
    const size_t count = 64 * size_t(p);
    const double n = count * 4.0;
    const Terms s = scheduleTerms("ring", p, count);
    EXPECT_EQ(s.steps, 2.0 * (p - 1)) << p;
    EXPECT_EQ(s.bytesSent, 2.0 * (p - 1) * n / p) << p;
    EXPECT_EQ(s.bytesReduced, (p - 1) * n / p) << p;
  }
}

}  // namespace
}  // namespace chorus::sim
