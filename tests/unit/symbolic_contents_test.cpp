// The interval bookkeeping of the symbolic checker against a plain array of per-element
// values: random writes, reads and folds (fixed seed) must agree element by element, so
// that splitting and merging ranges can neither hide nor invent a contribution.
#include "symbolic_contents.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace chorus::symbolic {
namespace {

constexpr int64_t kStride = 5;  // elements per rank's input

// One element, spelled out: which ranks (a mask: the tests use ranks < 64), which input
// element, finalized.
struct Element {
  uint64_t ranks;
  int64_t index;
  bool finalized;
  bool operator==(const Element&) const = default;
};

uint64_t maskOf(const RankSet& set) {
  std::vector<uint64_t> bits = set.bits();
  return bits.empty() ? 0 : bits[0];
}

Element elementAt(const Content& c, int64_t position) {
  if (c.shift == kNothing || c.shift == kMixed) return {maskOf(c.ranks), c.shift, c.finalized};
  const int64_t g = position + c.shift;
  if (c.ranks.empty()) return {uint64_t{1} << (g / kStride), g % kStride, false};  // rank-major
  return {maskOf(c.ranks), g, c.finalized};
}

std::vector<Element> spell(const Pieces& pieces) {
  std::vector<Element> out;
  for (const Piece& p : pieces)
    for (size_t k = 0; k < p.length; ++k)
      out.push_back(elementAt(p.content, static_cast<int64_t>(out.size())));
  return out;
}

// A random piece list of `length` elements: one rank's data, a rank set, or nothing.
Pieces randomPieces(std::mt19937& rng, size_t length) {
  Pieces pieces;
  while (length > 0) {
    const size_t n = std::min<size_t>(length, 1 + rng() % 7);
    Content c;
    switch (rng() % 4) {
      case 0:  // rank-major data starting at a random element of a random rank
        c = single(static_cast<int>(rng() % 4), static_cast<int64_t>(rng() % 5), kStride);
        break;
      case 1:
      case 2: {
        const int lo = static_cast<int>(rng() % 6);
        c = Content{RankSet(lo, lo + 1 + static_cast<int>(rng() % 3)),
                    static_cast<int64_t>(rng() % 3) - 1, rng() % 5 == 0};
        break;
      }
      default:
        break;  // nothing written
    }
    append(pieces, n, moved(c, static_cast<int64_t>(length)));  // arbitrary origin
    length -= n;
  }
  return pieces;
}

TEST(Schedule, CheckerIntervalsAgreeWithAPlainArray) {
  std::mt19937 rng(20261201);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t size = 1 + rng() % 60;
    Contents buffer(size);
    Pieces all;
    buffer.read(0, size, all);
    std::vector<Element> plain = spell(all);
    for (int op = 0; op < 40; ++op) {
      const size_t begin = rng() % size, length = 1 + rng() % (size - begin);
      Pieces written = randomPieces(rng, length);
      std::vector<Element> expected = spell(written);
      buffer.write(begin, written);
      std::copy(expected.begin(), expected.end(), plain.begin() + begin);
      const size_t from = rng() % size, n = rng() % (size - from + 1);
      Pieces got;
      buffer.read(from, n, got);
      std::vector<Element> part(plain.begin() + from, plain.begin() + from + n);
      ASSERT_EQ(spell(got), part) << "trial " << trial << " op " << op;
    }
    // Equal neighbours are merged: no two adjacent intervals hold the same.
    buffer.read(0, size, all);
    ASSERT_EQ(spell(all), plain);
    EXPECT_EQ(buffer.intervals(), all.size());
  }
}

TEST(Schedule, CheckerFoldAgreesElementByElement) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    const size_t length = 1 + rng() % 30;
    Pieces a = randomPieces(rng, length), b = randomPieces(rng, length), out;
    std::string error;
    fold(a, b, kStride, out, error);
    std::vector<Element> x = spell(a), y = spell(b), z = spell(out);
    ASSERT_EQ(z.size(), length);
    bool wrong = false;
    for (size_t k = 0; k < length; ++k) {                 // the plain fold of each element
      const bool twice = (x[k].ranks & y[k].ranks) != 0;  // then only the error counts
      wrong |= twice || x[k].finalized || y[k].finalized;
      if (twice) continue;
      const Element want{x[k].ranks | y[k].ranks, x[k].index == y[k].index ? x[k].index : kMixed,
                         x[k].finalized};
      ASSERT_EQ(z[k], want) << "trial " << trial << " element " << k;
    }
    EXPECT_EQ(!error.empty(), wrong) << "trial " << trial << ": " << error;
  }
}

}  // namespace
}  // namespace chorus::symbolic
