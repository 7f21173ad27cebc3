// What schedules cost and how they cut buffers: messages and elements per rank against
// the formulas in docs/algorithms.md, partitions, ring order. Their correctness is proved
// in schedule_proof_test.cpp.
#include "../common/schedule_terms.hpp"
#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace chorus {
namespace {

// Hierarchical algorithms are the flat ring without a layout.
bool collectiveAlgorithm(const Algorithm& a) {
  return a.collective != Collective::Send && a.collective != Collective::Recv &&
         !std::string_view(a.name).starts_with("hier");
}

TEST(Schedule, RingOrderCrossesEachNodeBoundaryOnce) {
  const Layout layout = Layout::uniform(3, 4, /*interleaved=*/true);  // rank r on node r % 3
  int crossings = 0;
  for (int p = 0; p < layout.nranks(); ++p)
    crossings += !layout.sameNode(layout.ringRank(p), layout.ringRank((p + 1) % layout.nranks()));
  EXPECT_EQ(crossings, 3);
  for (int r = 0; r < layout.nranks(); ++r) EXPECT_EQ(layout.ringRank(layout.ringPosition(r)), r);
}

// The most messages and the most elements any rank sends (not always the same rank).
struct Cost {
  size_t messages = 0, elements = 0;
};
Cost busiest(const Algorithm& algorithm, int nranks, size_t count, int root = 0) {
  const test::ScheduleTerms t = test::busiestTerms(algorithm, nranks, count, root);
  return {t.sends, t.elementsSent};
}

int log2Floor(int n) {
  int k = 0;
  while ((2 << k) <= n) ++k;
  return k;
}
int log2Ceil(int n) { return n <= 1 ? 0 : log2Floor(n - 1) + 1; }

TEST(Schedule, StepsAndBytesMatchTheFormulas) {
  const size_t count = 1 << 20;
  for (int n : {2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 24, 64, 100}) {
    const int pof2 = 1 << log2Floor(n), extra = n - pof2, lg = log2Floor(n);
    auto find = [](Collective c, const char* name) { return *findAlgorithm(c, name); };
    // rd all-reduce: log2 p' exchanges of the whole vector, + 1 for a paired rank.
    Cost rd = busiest(find(Collective::AllReduce, "rd"), n, count);
    EXPECT_EQ(rd.messages, size_t(lg + (extra ? 1 : 0))) << n;
    EXPECT_EQ(rd.elements, count * (lg + (extra ? 1 : 0))) << n;
    // rhd all-reduce: 2 log2 p' messages of about 2 (p'-1)/p' count, + count when paired.
    Cost rhd = busiest(find(Collective::AllReduce, "rhd"), n, count);
    EXPECT_EQ(rhd.messages, size_t(2 * lg + (extra ? 1 : 0))) << n;
    const double ideal = 2.0 * (pof2 - 1) / pof2 * count + (extra ? count : 0);
    EXPECT_NEAR(double(rhd.elements), ideal, 2.0 * lg + 2) << n;
    // Bruck: ceil(log2 p) rounds of at most two messages, (p-1) blocks in all.
    const size_t m = 1000;
    Cost bruck = busiest(find(Collective::AllGather, "bruck"), n, m);
    EXPECT_EQ(bruck.elements, m * (n - 1)) << n;
    EXPECT_GE(bruck.messages, size_t(log2Ceil(n)));
    EXPECT_LE(bruck.messages, size_t(2 * log2Ceil(n)));
    if (n == pof2) EXPECT_EQ(busiest(find(Collective::AllGather, "rd"), n, m).messages, size_t(lg));
    // Recursive halving reduce-scatter: (p'-1)/p' of the input (+ all of it when paired).
    Cost rh = busiest(find(Collective::ReduceScatter, "rhd"), n, m);
    EXPECT_EQ(rh.messages, size_t(lg + (extra ? 1 : 0))) << n;
    // Binomial broadcast: the root sends the vector ceil(log2 p) times.
    Cost tree = busiest(find(Collective::Broadcast, "tree"), n, count);
    EXPECT_EQ(tree.messages, size_t(log2Ceil(n))) << n;
    EXPECT_EQ(tree.elements, count * log2Ceil(n)) << n;
    // Scatter + all-gather: the root sends about 2 (p-1)/p of the vector.
    Cost sag = busiest(find(Collective::Broadcast, "scatter_allgather"), n, count);
    EXPECT_NEAR(double(sag.elements), 2.0 * (n - 1) / n * count, 2.0 * n) << n;
    // Tree reduce: every non-root rank sends the vector once.
    EXPECT_EQ(busiest(find(Collective::Reduce, "tree"), n, count).elements, count) << n;
    // Pairwise all-to-all: n-1 messages of one block each.
    Cost pairwise = busiest(find(Collective::AllToAll, "pairwise"), n, m);
    EXPECT_EQ(pairwise.messages, size_t(n - 1)) << n;
    EXPECT_EQ(pairwise.elements, m * (n - 1)) << n;
    // rsg: (p-1)/p in the ring plus 1/p to the root.
    EXPECT_NEAR(double(busiest(find(Collective::Reduce, "rsg"), n, count).elements), double(count),
                n)
        << n;
  }
}

// The bytes per rank that docs/algorithms.md states, rank by rank, at power-of-two and
// other p (counts that split evenly, so the numbers are exact).
size_t sentBy(const Algorithm& algorithm, int rank, int nranks, size_t count, int root = 0) {
  return test::termsOf(algorithm.build({algorithm.collective, rank, nranks, count, root}))
      .elementsSent;
}

TEST(Schedule, BytesPerRankAsDocumented) {
  const size_t m = 1000;  // elements per rank's block
  for (int n : {2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17}) {
    const int pof2 = 1 << log2Floor(n), extra = n - pof2;
    // rhd reduce-scatter, S = n m (the whole input): a paired odd rank (odd, among the
    // first 2e) sends all of S, every other rank (p-1)/p S.
    const Algorithm& rh = *findAlgorithm(Collective::ReduceScatter, "rhd");
    for (int r = 0; r < n; ++r) {
      const bool pairedOdd = r < 2 * extra && r % 2 == 1;
      EXPECT_EQ(sentBy(rh, r, n, m), pairedOdd ? n * m : (n - 1) * m) << "p=" << n << " rank " << r;
    }
    // scatter + all-gather broadcast, S = n m: the root 2(p-1)/p S, the rank before the
    // root nothing, every other rank (p-1)/p S.
    const Algorithm& sag = *findAlgorithm(Collective::Broadcast, "scatter_allgather");
    for (int root : {0, n - 1}) {
      for (int r = 0; r < n; ++r) {
        const size_t expected = r == root ? 2 * (n - 1) * m : (r + 1) % n == root ? 0 : (n - 1) * m;
        EXPECT_EQ(sentBy(sag, r, n, n * m, root), expected)
            << "p=" << n << " root " << root << " rank " << r;
      }
    }
  }
}

// docs/algorithms.md describes every algorithm and tabulates, for the plain collectives,
// the messages and elements sent by the busiest rank as read off the schedules. Both are
// checked here, so the documentation cannot drift from the code.
// `CHORUS_SCHEDULE_TABLE=1 chorus_unit_tests --gtest_filter=Schedule.Docs*` prints the table.
std::string docsText() {
  std::ifstream file(CHORUS_DOCS_DIR "/algorithms.md");
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

const char* documentedName(Collective c) {
  switch (c) {
    case Collective::AllReduce:
      return "all-reduce";
    case Collective::AllGather:
      return "all-gather";
    case Collective::ReduceScatter:
      return "reduce-scatter";
    case Collective::Broadcast:
      return "broadcast";
    case Collective::Reduce:
      return "reduce";
    case Collective::AllToAll:
      return "all-to-all";
    case Collective::Gather:
      return "gather";
    case Collective::Scatter:
      return "scatter";
    case Collective::AllGatherV:
      return "all-gather-v";
    case Collective::ReduceScatterV:
      return "reduce-scatter-v";
    case Collective::Send:
    case Collective::Recv:
      break;
  }
  return nullptr;
}

TEST(Schedule, DocsDescribeEveryAlgorithm) {
  const std::string docs = docsText();
  ASSERT_FALSE(docs.empty()) << CHORUS_DOCS_DIR "/algorithms.md not readable";
  for (const Algorithm& a : allAlgorithms()) {
    const char* collective = documentedName(a.collective);
    if (!collective) continue;
    const std::string row = std::string("| ") + collective + " | `" + a.name + "` |";
    EXPECT_NE(docs.find(row), std::string::npos) << "docs/algorithms.md has no row " << row;
  }
}

TEST(Schedule, DocsTableMatchesSchedules) {
  const std::string docs = docsText();
  ASSERT_FALSE(docs.empty());
  const size_t count = 1 << 20;
  std::string table;
  size_t rows = 0;
  for (const Algorithm& a : allAlgorithms()) {
    // The plain collectives: one-sided ones send nothing (they read), gather/scatter and
    // the v-variants have their own shapes (stated in the first table).
    if (!collectiveAlgorithm(a) || a.oneSided || a.collective == Collective::Gather ||
        a.collective == Collective::Scatter || a.collective == Collective::AllGatherV ||
        a.collective == Collective::ReduceScatterV)
      continue;
    char cell[64];
    std::string row = std::string("| ") + toString(a.collective) + " | " + a.name + " |";
    for (int n : {2, 3, 4, 8, 9, 16, 64}) {
      Cost c = busiest(a, n, count);
      size_t base = a.collective == Collective::AllGather ||
                            a.collective == Collective::ReduceScatter ||
                            a.collective == Collective::AllToAll
                        ? count * n
                        : count;
      std::snprintf(cell, sizeof cell, " %zu / %.2f |", c.messages,
                    double(c.elements) / double(base));
      row += cell;
    }
    EXPECT_NE(docs.find("\n" + row + "\n"), std::string::npos)
        << "docs/algorithms.md: the measured row should read\n"
        << row;
    table += row + "\n";
    ++rows;
  }
  // No stale rows either: the table has exactly these rows.
  const size_t header = docs.find("| collective | name | p=2 |");
  ASSERT_NE(header, std::string::npos);
  size_t documented = 0;
  for (size_t at = docs.find('\n', header);
       at != std::string::npos && at + 1 < docs.size() && docs[at + 1] == '|';
       at = docs.find('\n', at + 1))
    ++documented;
  EXPECT_EQ(documented, rows + 1)
      << "rows in docs/algorithms.md's measured table (and its |---| line)";
  if (std::getenv("CHORUS_SCHEDULE_TABLE")) std::printf("%s", table.c_str());
}

TEST(Schedule, PartitionCoversTheBufferOnce) {
  for (size_t count : {0, 1, 7, 100, 1023}) {
    for (int parts : {1, 2, 3, 7, 9, 64}) {
      size_t next = 0;
      for (int i = 0; i < parts; ++i) {
        Part p = partOf(count, parts, i);
        EXPECT_EQ(p.begin, next);
        next += p.size;
      }
      EXPECT_EQ(next, count);
    }
  }
}

TEST(Schedule, RingAllReduceMovesTwoShardsPerStep) {
  // 2(n-1) sends of about count/n elements each: the bandwidth-optimal volume.
  const int n = 8;
  const size_t count = 8000;
  Schedule s = ringAllReduce({Collective::AllReduce, 3, n, count, 0});
  size_t sent = 0, sends = 0;
  for (const Step& step : s.steps)
    if (step.kind == StepKind::Send) sent += step.src.count, ++sends;
  EXPECT_EQ(sends, 2u * (n - 1));
  EXPECT_EQ(sent, 2 * (n - 1) * count / n);
}

}  // namespace
}  // namespace chorus
