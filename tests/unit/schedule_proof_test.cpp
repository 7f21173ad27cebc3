// Proofs of every algorithm's Schedule by symbolic execution on element ranges
// (symbolic_checker.hpp): each output element holds each required contribution exactly
// once, finalized once, or the right source element; every receive matches a send of the
// same length from the same peer in order; no step reads data before it is produced.
//
// Coverage (the README's Tests section states the same):
//  - every algorithm, p = 1..12, many counts and roots, sends one element at a time, and
//    a late rank;
//  - the algorithms whose schedules have O(p log p) steps in all, every p = 1..1024;
//  - the others (O(p^2) steps: ring-type, one-shot, two-shot, pairwise, scatter+all-gather,
//    rsg, the one-sided ones), every p = 1..kEveryQuadraticUpTo and the kQuadraticSamples
//    (one-sided: up to kOneSidedSampledUpTo): a symbolic step
//    costs about a microsecond, and every p up to 1024 would be ~10^10 steps (hours;
//    CHORUS_SCHEDULE_EVERY_P=N runs every p up to N, CHORUS_SCHEDULE_P=1024 one more p);
//  - the hierarchical ones on layouts up to 32 nodes x 8 ranks;
//  - send/recv at every p = 2..1024.
// Counts: 0 and countFor(p) (every chunk non-empty; even or uneven), in place or not,
// alternating with p so that each combination comes every fourth p.
// CHORUS_SCHEDULE_TIMES=1 prints the time each part takes.
#include "algorithms/algorithms.hpp"
#include "algorithms/layout.hpp"
#include "symbolic_checker.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace chorus {
namespace {

using symbolic::Case;
using symbolic::kElementWise;
using symbolic::prove;

constexpr int kEveryQuadraticUpTo = 32;
constexpr int kQuadraticSamples[] = {63, 64, 65, 127, 128, 129, 255, 256, 257, 512, 513};
// One-sided algorithms (seven, ~50 s at p up to 513 on two cores) stop at this sample in
// CI; CHORUS_SCHEDULE_P / CHORUS_SCHEDULE_EVERY_P take them further.
constexpr int kOneSidedSampledUpTo = 129;

bool pointToPoint(const Algorithm& a) {
  return a.collective == Collective::Send || a.collective == Collective::Recv;
}
bool hierarchical(const Algorithm& a) { return std::string_view(a.name).starts_with("hier"); }
bool rooted(const Algorithm& a) {
  return a.collective == Collective::Broadcast || a.collective == Collective::Reduce ||
         a.collective == Collective::Gather || a.collective == Collective::Scatter;
}

// Algorithms whose schedules, over all ranks, have O(p log p) steps.
bool logarithmic(const Algorithm& a) {
  const std::string_view name = a.name;
  switch (a.collective) {
    case Collective::AllReduce:
      return name == "rd" || name == "rhd";
    case Collective::AllGather:
      return name == "rd" || name == "bruck";
    case Collective::ReduceScatter:
      return name == "rhd";
    case Collective::Broadcast:
    case Collective::Reduce:
      return name == "tree" || name == "ring";
    case Collective::Gather:  // direct: O(p) steps in all
    case Collective::Scatter:
      return true;
    default:
      return false;
  }
}

// A count for p ranks that gives every rank a non-empty chunk (count / p elements for
// all-reduce-like collectives, count per rank for the others): the same for every rank
// for even p, uneven for odd p.
size_t countFor(int p) {
  const size_t n = static_cast<size_t>(p);
  return p % 2 == 0 ? n : 2 * n + 1 + n % 7;
}

class Timer {
 public:
  explicit Timer(const char* what) : what_(what), start_(std::chrono::steady_clock::now()) {}
  ~Timer() {
    if (!std::getenv("CHORUS_SCHEDULE_TIMES")) return;
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start_;
    std::printf("%s: %.2f s\n", what_, took.count());
  }

 private:
  const char* what_;
  std::chrono::steady_clock::time_point start_;
};

// Proves count 0 and countFor(p), in place for p = 1, 2 mod 4, with sends in two
// installments; "" or the first failure.
std::string proveAtP(const Algorithm& a, int p, const Layout* layout = nullptr) {
  const int root = rooted(a) ? (p * 5 / 7) % p : 0;
  const bool inPlace = p % 4 == 1 || p % 4 == 2;  // with countFor: all four combinations
  for (size_t count : {countFor(p), size_t{0}}) {
    std::string error = prove(a, Case{p, count, root, inPlace, 2, -1, layout});
    if (!error.empty()) return error;
  }
  return "";
}

// check(0), ..., check(n - 1) on two threads (the CI machine has two cores); "" or the
// first failure of the first thread that failed (each stops at its first).
std::string inParallel(size_t n, const std::function<std::string(size_t)>& check) {
  constexpr size_t kThreads = 2;
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = t; i < n && errors[t].empty(); i += kThreads) errors[t] = check(i);
    });
  for (std::thread& thread : threads) thread.join();
  for (const std::string& error : errors)
    if (!error.empty()) return error;
  return "";
}

// The algorithms `keep` selects.
std::vector<const Algorithm*> algorithmsWhere(bool (*keep)(const Algorithm&)) {
  std::vector<const Algorithm*> out;
  for (const Algorithm& a : allAlgorithms())
    if (keep(a)) out.push_back(&a);
  return out;
}

TEST(Schedule, EveryAlgorithmSendingOneElementAtATime) {
  Timer timer("p = 1..12, element-wise");
  for (const Algorithm& a : allAlgorithms()) {
    if (pointToPoint(a)) continue;
    for (int p = 1; p <= 12; ++p) {
      std::vector<int> roots = {0};
      if (rooted(a)) roots = {0, p - 1, p / 2};
      for (size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t{5}, size_t(p - 1), size_t(p),
                           size_t(p + 3), size_t(2 * p + 1), size_t{64}}) {
        for (int root : roots) {
          for (bool inPlace : {false, true}) {
            // One-sided algorithms also with the engine's one-pass folds (rule 6).
            for (bool fused : {false, true}) {
              if (fused && !a.oneSided && !a.staged) continue;
              std::string error =
                  prove(a, Case{p, count, root, inPlace, kElementWise, -1, nullptr, fused});
              ASSERT_EQ(error, "");
              if (!inPlace || p > 9) continue;
              error = prove(
                  a, Case{p, count, root, inPlace, kElementWise, /*late=*/p / 2, nullptr, fused});
              ASSERT_EQ(error, "");
            }
          }
        }
      }
    }
  }
}

TEST(Schedule, LogarithmicAlgorithmsAtEveryRankCountUpTo1024) {
  Timer timer("O(p log p) algorithms, p = 1..1024");
  const std::vector<const Algorithm*> algorithms = algorithmsWhere(logarithmic);
  const size_t n = algorithms.size();
  EXPECT_EQ(inParallel(n * 1024,
                       [&](size_t i) {
                         return proveAtP(*algorithms[i % n], static_cast<int>(i / n) + 1);
                       }),
            "");
}

TEST(Schedule, QuadraticAlgorithmsAtSmallAndSampledLargeRankCounts) {
  Timer timer("O(p^2) algorithms, p = 1..32 and sampled to 513");
  // CHORUS_SCHEDULE_EVERY_P=N proves them at every p up to N instead (N = 1024: hours);
  // CHORUS_SCHEDULE_P=1023,1024 at these p too (1024: half a minute, 1.4 GB).
  const char* every = std::getenv("CHORUS_SCHEDULE_EVERY_P");
  const int upTo = every ? std::atoi(every) : kEveryQuadraticUpTo;
  std::vector<int> ps;
  for (int p = 1; p <= upTo; ++p) ps.push_back(p);
  for (int p : kQuadraticSamples)
    if (p > upTo) ps.push_back(p);
  if (const char* more = std::getenv("CHORUS_SCHEDULE_P"))
    for (char* end = nullptr;; more = end + (*end == ',')) {
      const long p = std::strtol(more, &end, 10);
      if (end == more || p < 1 || p > 1 << 16) break;
      ps.push_back(static_cast<int>(p));
      if (*end != ',') break;
    }
  const std::vector<const Algorithm*> algorithms = algorithmsWhere(
      [](const Algorithm& a) { return !pointToPoint(a) && !logarithmic(a) && !hierarchical(a); });
  const bool allOneSided = every || std::getenv("CHORUS_SCHEDULE_P");
  for (int p : ps) {
    const bool skipOneSided = p > kOneSidedSampledUpTo && !allOneSided;
    const std::string error = inParallel(algorithms.size(), [&](size_t i) {
      return skipOneSided && algorithms[i]->oneSided ? std::string() : proveAtP(*algorithms[i], p);
    });
    ASSERT_EQ(error, "");
    if (every && std::getenv("CHORUS_SCHEDULE_TIMES")) std::printf("p = %d proved\n", p);
  }
}

TEST(Schedule, SendAndReceiveAtEveryRankCountUpTo1024) {
  Timer timer("send/recv, p = 2..1024");
  EXPECT_EQ(inParallel(1023,
                       [](size_t i) {
                         const int p = static_cast<int>(i) + 2;
                         std::string error = symbolic::provePointToPoint(p, 1, 1, true, 2);
                         const int shift = p / 2 + 1;
                         if (error.empty() && shift % p != 0)
                           error = symbolic::provePointToPoint(p, countFor(p), shift, false, 2);
                         return error;
                       }),
            "");
  ASSERT_EQ(symbolic::provePointToPoint(3, 0, 1, false, 2), "");
}

TEST(Schedule, HierarchicalOnLayoutsUpTo32NodesOf8) {
  // N nodes x L ranks, numbered by node (block) or round robin (interleaved), and uneven
  // layouts (the flat fallback). The rings follow the layout too.
  Timer timer("hierarchical layouts");
  std::vector<Layout> layouts;
  for (int nodes : {1, 2, 3, 4, 5, 7, 8, 16, 31, 32})
    for (int perNode : {1, 2, 3, 4, 8})
      for (bool interleaved : {false, true})
        if (nodes * perNode <= 64 || (nodes == 32 && perNode == 8))
          layouts.push_back(Layout::uniform(nodes, perNode, interleaved));
  for (std::vector<int> sizes : {std::vector<int>{3, 1, 2}, {8, 8, 7}, {1, 8, 8, 8}}) {
    std::vector<int> nodeOf;
    for (size_t node = 0; node < sizes.size(); ++node)
      for (int k = 0; k < sizes[node]; ++k) nodeOf.push_back(static_cast<int>(node));
    layouts.push_back(Layout::fromNodeOf(nodeOf));
  }
  const std::vector<const Algorithm*> algorithms = algorithmsWhere([](const Algorithm& a) {
    const bool ring =
        std::string_view(a.name) == "ring" &&
        (a.collective == Collective::AllReduce || a.collective == Collective::AllGather ||
         a.collective == Collective::ReduceScatter || a.collective == Collective::AllGatherV ||
         a.collective == Collective::ReduceScatterV);
    return hierarchical(a) || ring;
  });
  const size_t n = algorithms.size();
  EXPECT_EQ(
      inParallel(n * layouts.size(),
                 [&](size_t i) {
                   const Algorithm& a = *algorithms[i % n];
                   const Layout& layout = layouts[i / n];
                   const int p = layout.nranks();
                   std::string error = proveAtP(a, p, &layout);
                   if (p > 12) return error;  // small layouts also one element at a time, late rank
                   for (size_t count : {size_t{1}, size_t(p + 3)}) {
                     if (error.empty())
                       error = prove(a, Case{p, count, 0, true, kElementWise, p / 2, &layout});
                     if (error.empty())
                       error = prove(a, Case{p, count, 0, false, kElementWise, -1, &layout});
                   }
                   return error;
                 }),
      "");
}

}  // namespace
}  // namespace chorus
