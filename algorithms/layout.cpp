#include "algorithms/layout.hpp"

#include <map>

namespace chorus {

Layout::Layout(std::span<const std::string> nodeKey) {
  std::map<std::string, int> numbers;
  std::vector<int> nodeOf;
  for (const std::string& key : nodeKey)
    nodeOf.push_back(numbers.emplace(key, static_cast<int>(numbers.size())).first->second);
  index(std::move(nodeOf));
}

Layout Layout::fromNodeOf(std::span<const int> nodeOf) {
  std::vector<std::string> keys;
  for (int node : nodeOf) keys.push_back(std::to_string(node));
  return Layout(keys);
}

Layout Layout::uniform(int nodes, int perNode, bool interleaved) {
  std::vector<int> nodeOf;
  for (int r = 0; r < nodes * perNode; ++r) nodeOf.push_back(interleaved ? r % nodes : r / perNode);
  Layout layout;
  layout.index(std::move(nodeOf));
  return layout;
}

void Layout::index(std::vector<int> nodeOf) {
  nodeOf_ = std::move(nodeOf);
  localIndex_.assign(nodeOf_.size(), 0);
  ranksOf_.clear();
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the node numbers
  for (int r = 0; r < nranks(); ++r) {
    const int node = nodeOf_[r];
    if (node >= nodes()) ranksOf_.resize(node + 1);
    localIndex_[r] = static_cast<int>(ranksOf_[node].size());
    ranksOf_[node].push_back(r);
    h = (h ^ static_cast<uint64_t>(node)) * 1099511628211ull;
  }
  fingerprint_ = h ^ nodeOf_.size();
  ring_.clear();
  for (const auto& ranks : ranksOf_) ring_.insert(ring_.end(), ranks.begin(), ranks.end());
  ringPosition_.assign(nodeOf_.size(), 0);
  for (size_t p = 0; p < ring_.size(); ++p) ringPosition_[ring_[p]] = static_cast<int>(p);
}

int Layout::uniformLocalSize() const {
  if (ranksOf_.empty()) return 0;
  const size_t size = ranksOf_.front().size();
  for (const auto& ranks : ranksOf_)
    if (ranks.size() != size) return 0;
  return static_cast<int>(size);
}

std::string Layout::describe() const {
  std::string out = std::to_string(nodes()) + (nodes() == 1 ? " node:" : " nodes:");
  for (int n = 0; n < nodes(); ++n) {
    out += n == 0 ? " " : " | ";
    const auto& ranks = ranksOf_[n];
    for (size_t i = 0; i < ranks.size();) {
      size_t j = i;
      while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
      if (i > 0) out += ',';
      out += std::to_string(ranks[i]);
      if (j > i) out += '-' + std::to_string(ranks[j]);
      i = j + 1;
    }
  }
  return out;
}

}  // namespace chorus
