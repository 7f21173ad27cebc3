#include "symbolic_contents.hpp"

#include <algorithm>
#include <iterator>

namespace chorus::symbolic {

bool RankSet::add(const RankSet& other) {
  if (bits_.empty() && other.bits_.empty()) {  // both intervals: merge them
    static thread_local std::vector<Interval> merged;
    merged.clear();
    const Interval *x = inline_.data(), *y = other.inline_.data();
    int a = 0, b = 0;
    while (a < size_ || b < other.size_) {
      bool takeA = b == other.size_ || (a < size_ && x[a].first < y[b].first);
      Interval next = takeA ? x[a++] : y[b++];
      if (!merged.empty() && next.first < merged.back().second) return false;  // overlap
      if (!merged.empty() && next.first == merged.back().second) {
        merged.back().second = next.second;
      } else {
        merged.push_back(next);
      }
    }
    if (merged.size() <= kInline) {
      size_ = static_cast<int>(merged.size());
      std::copy(merged.begin(), merged.end(), inline_.begin());
      return true;
    }
  }
  static thread_local std::vector<uint64_t> x, y;
  toBits(x);
  other.toBits(y);
  if (x.size() < y.size()) x.swap(y);
  for (size_t w = 0; w < y.size(); ++w) {
    if (x[w] & y[w]) return false;
    x[w] |= y[w];
  }
  fromBits(x);
  return true;
}

void RankSet::toBits(std::vector<uint64_t>& out) const {
  if (!bits_.empty()) {
    out = bits_;
    return;
  }
  out.clear();
  for (int i = 0; i < size_; ++i) {
    auto [lo, hi] = inline_[i];
    if (out.size() * 64 < size_t(hi)) out.resize((hi + 63) / 64, 0);
    for (int r = lo; r < hi; ++r) out[r / 64] |= uint64_t{1} << (r % 64);
  }
}

void RankSet::fromBits(std::vector<uint64_t>& bits) {
  while (!bits.empty() && bits.back() == 0) bits.pop_back();
  // Count the runs of ones; up to kInline of them are kept as intervals.
  int runs = 0;
  bool carry = false;
  for (uint64_t w : bits) {
    const uint64_t starts = w & ~((w << 1) | (carry ? 1 : 0));
    runs += __builtin_popcountll(starts);
    carry = w >> 63;
  }
  if (runs > kInline) {
    size_ = 0;
    bits_ = bits;
    return;
  }
  bits_.clear();
  size_ = 0;
  const int n = static_cast<int>(bits.size() * 64);
  for (int r = 0; r < n;) {
    if (!(bits[r / 64] >> (r % 64) & 1)) {
      ++r;
      continue;
    }
    int end = r;
    while (end < n && (bits[end / 64] >> (end % 64) & 1)) ++end;
    inline_[size_++] = {r, end};
    r = end;
  }
}

std::string RankSet::describe() const {
  std::vector<uint64_t> bits;
  toBits(bits);
  std::string text = "{";
  const int n = static_cast<int>(bits.size() * 64);
  for (int r = 0; r < n;) {
    if (!(bits[r / 64] >> (r % 64) & 1)) {
      ++r;
      continue;
    }
    int end = r;
    while (end < n && (bits[end / 64] >> (end % 64) & 1)) ++end;
    text += "[" + std::to_string(r) + "," + std::to_string(end) + ")";
    r = end;
  }
  return text + "}";
}

Content single(int rank, int64_t index, int64_t stride) {
  return Content{RankSet(), index + rank * stride, false};
}

std::string describe(const Content& c, int64_t stride) {
  if (c.shift == kNothing) return "nothing written";
  std::string text = c.ranks.empty() ? "one rank's data (rank-major element = position + " +
                                           std::to_string(c.shift) + ", " + std::to_string(stride) +
                                           " per rank)"
                                     : "ranks " + c.ranks.describe() + ", ";
  if (!c.ranks.empty())
    text += c.shift == kMixed ? "mixed input elements"
                              : "input element = position + " + std::to_string(c.shift);
  return text + (c.finalized ? ", finalized" : "");
}

void append(Pieces& pieces, size_t length, Content content) {
  if (length == 0) return;
  if (!pieces.empty() && pieces.back().content == content) {
    pieces.back().length += length;
    return;
  }
  pieces.push_back({length, std::move(content)});
}

void expand(const Pieces& pieces, int64_t stride, Pieces& out) {
  out.clear();
  int64_t at = 0;
  for (const Piece& p : pieces) {
    if (!p.content.ranks.empty() || p.content.shift <= kMixed) {
      out.push_back(p);
    } else {
      for (int64_t q = at, end = at + static_cast<int64_t>(p.length); q < end;) {
        const int64_t g = q + p.content.shift;
        const int64_t rank = g >= 0 ? g / stride : -((-g + stride - 1) / stride);
        const int64_t take = std::min(end, (rank + 1) * stride - p.content.shift) - q;
        out.push_back({static_cast<size_t>(take), Content{RankSet(int(rank), int(rank) + 1),
                                                          p.content.shift - rank * stride, false}});
        q += take;
      }
    }
    at += static_cast<int64_t>(p.length);
  }
}

void fold(const Pieces& a, const Pieces& b, int64_t stride, Pieces& out, std::string& error) {
  static thread_local Pieces x, y;
  expand(a, stride, x);
  expand(b, stride, y);
  out.clear();
  size_t i = 0, j = 0, usedA = 0, usedB = 0;
  while (i < x.size() && j < y.size()) {
    const size_t n = std::min(x[i].length - usedA, y[j].length - usedB);
    const Content &u = x[i].content, &v = y[j].content;
    Content c = u;
    if (u.finalized || v.finalized) error = "folds a finalized element: " + describe(u, stride);
    if (!c.ranks.add(v.ranks))
      error = "a rank contributes twice: " + describe(u, stride) + " + " + describe(v, stride);
    if (u.shift != v.shift) c.shift = kMixed;
    append(out, n, std::move(c));
    if ((usedA += n) == x[i].length) ++i, usedA = 0;
    if ((usedB += n) == y[j].length) ++j, usedB = 0;
  }
}

Contents::Contents(size_t size) : size_(size) {
  if (size > 0) segments_.emplace(0, Segment{size, Content{}});
}

Contents::Map::iterator Contents::split(size_t at) {
  auto it = std::prev(segments_.upper_bound(at));
  if (it->first == at) return it;
  Segment& left = it->second;
  auto right = segments_.emplace_hint(std::next(it), at, Segment{left.end, left.content});
  left.end = at;
  return right;
}

void Contents::read(size_t begin, size_t length, Pieces& out) const {
  out.clear();
  if (length == 0) return;
  const size_t end = begin + length;
  auto it = std::prev(segments_.upper_bound(begin));
  for (size_t at = begin; at < end; ++it) {
    const size_t take = std::min(it->second.end, end) - at;
    append(out, take, moved(it->second.content, static_cast<int64_t>(begin)));
    at += take;
  }
}

void Contents::write(size_t begin, const Pieces& pieces) {
  size_t end = begin;
  for (const Piece& p : pieces) end += p.length;
  if (end == begin) return;
  auto first = split(begin);
  auto last = end < size_ ? split(end) : segments_.end();
  segments_.erase(first, last);
  // Insert, merging with the left neighbour and between pieces when contents are equal.
  auto left =
      segments_.empty() || begin == 0 ? segments_.end() : std::prev(segments_.lower_bound(begin));
  size_t at = begin;
  for (const Piece& p : pieces) {
    Content c = moved(p.content, -static_cast<int64_t>(begin));
    if (left != segments_.end() && left->second.end == at && left->second.content == c) {
      left->second.end = at + p.length;
    } else {
      left = segments_.emplace_hint(last, at, Segment{at + p.length, std::move(c)});
    }
    at += p.length;
  }
  if (last != segments_.end() && last->second.content == left->second.content) {
    left->second.end = last->second.end;
    segments_.erase(last);
  }
}

}  // namespace chorus::symbolic
