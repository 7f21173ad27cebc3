// What the symbolic checker knows about elements, kept per element range: which ranks'
// inputs an element holds, which input element they came from, and whether it has been
// finalized. A buffer is a map of disjoint intervals with one such description each.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace chorus::symbolic {

// A set of ranks (a second contribution of any rank is an error, not a count): up to
// kInline sorted disjoint [lo, hi) intervals in the value itself (ring-like sets are
// contiguous modulo p), else a bitset (recursive halving's strided sets). Each set has
// one representation, so equal sets compare equal.
class RankSet {
 public:
  using Interval = std::pair<int, int>;
  RankSet() = default;
  RankSet(int lo, int hi) : size_(1) { inline_[0] = {lo, hi}; }
  bool empty() const { return size_ == 0 && bits_.empty(); }
  bool isRange(int lo, int hi) const { return size_ == 1 && inline_[0] == Interval{lo, hi}; }
  // this |= other; false (and unchanged) when a rank is in both.
  bool add(const RankSet& other);
  bool operator==(const RankSet& o) const {
    return size_ == o.size_ && bits_ == o.bits_ &&
           std::equal(inline_.begin(), inline_.begin() + size_, o.inline_.begin());
  }
  std::string describe() const;
  std::vector<uint64_t> bits() const {  // rank r is bit r % 64 of word r / 64
    std::vector<uint64_t> out;
    toBits(out);
    return out;
  }

 private:
  static constexpr int kInline = 4;
  void toBits(std::vector<uint64_t>& out) const;
  void fromBits(std::vector<uint64_t>& bits);  // the canonical form of these bits
  std::array<Interval, kInline> inline_{};
  int size_ = 0;                // intervals in inline_; 0 when bits_ is used
  std::vector<uint64_t> bits_;  // no trailing zero words
};

// Input-element markers that are not an element index.
constexpr int64_t kNothing = INT64_MIN;    // never written
constexpr int64_t kMixed = INT64_MIN + 1;  // folded from different input elements

// What every element of a range holds. `shift` places it: the element at position x (of
// the buffer, or of a piece list: see Pieces) holds
//  - with `ranks` not empty: input element x + shift of each of those ranks;
//  - with `ranks` empty (one rank's data, not finalized: the canonical form, see
//    canonical()): element g = x + shift of all ranks' inputs laid end to end, that is
//    element g % S of rank g / S (S: elements per rank's input). Gathered blocks of
//    consecutive ranks then form one range, so an all-gather's output is one interval.
struct Content {
  RankSet ranks;
  int64_t shift = kNothing;
  bool finalized = false;
  bool operator==(const Content& o) const {
    return shift == o.shift && finalized == o.finalized && ranks == o.ranks;
  }
};
// The same content seen from positions moved by -delta (x' = x - delta).
inline Content moved(Content c, int64_t delta) {
  if (c.shift > kMixed) c.shift += delta;
  return c;
}
// Input element `index` of rank `rank` at position 0, in canonical form.
Content single(int rank, int64_t index, int64_t stride);
std::string describe(const Content& c, int64_t stride);

// Consecutive ranges; positions count from the first (shifts are relative to it).
struct Piece {
  size_t length;
  Content content;
};
using Pieces = std::vector<Piece>;
// Appends, merging with the last piece when it holds the same (the shifts of one list
// share its origin, so equal contents mean equal elements).
void append(Pieces& pieces, size_t length, Content content);

// The same pieces with one-rank data in the rank-set form (split where the rank changes).
void expand(const Pieces& pieces, int64_t stride, Pieces& out);

// out = a OP b element by element (a and b cover the same elements). Sets `error` when a
// rank would contribute twice or a finalized element is folded again.
void fold(const Pieces& a, const Pieces& b, int64_t stride, Pieces& out, std::string& error);

// One buffer: disjoint intervals covering [0, size), adjacent ones with equal contents
// merged.
class Contents {
 public:
  Contents() = default;
  explicit Contents(size_t size);
  size_t size() const { return size_; }
  // Pieces of [begin, begin + length), shifts relative to `begin`.
  void read(size_t begin, size_t length, Pieces& out) const;
  // Replaces [begin, begin + total length) with `pieces` (shifts relative to `begin`).
  void write(size_t begin, const Pieces& pieces);
  size_t intervals() const { return segments_.size(); }

 private:
  struct Segment {
    size_t end;
    Content content;  // shift relative to buffer position 0
  };
  using Map = std::map<size_t, Segment>;
  Map::iterator split(size_t at);  // a segment now starts at `at` (< size_)
  Map segments_;
  size_t size_ = 0;
};

}  // namespace chorus::symbolic
