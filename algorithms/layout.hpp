// Which ranks share a node: what hierarchical algorithms and the two-link cost model need
// of the topology. Nodes are numbered in order of their lowest rank; local indices in
// rank order within a node.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace chorus {

class Layout {
 public:
  Layout() = default;
  // nodeKey[r]: anything equal for ranks of one node (e.g. the host identity).
  explicit Layout(std::span<const std::string> nodeKey);
  // Ranks 0..nodes*perNode-1, node = rank / perNode (block) or rank % nodes (interleaved).
  static Layout uniform(int nodes, int perNode, bool interleaved = false);
  // nodeOf[r]: the node of rank r (any numbering).
  static Layout fromNodeOf(std::span<const int> nodeOf);

  int nranks() const { return static_cast<int>(nodeOf_.size()); }
  int nodes() const { return static_cast<int>(ranksOf_.size()); }
  int nodeOf(int rank) const { return nodeOf_[rank]; }
  int localIndex(int rank) const { return localIndex_[rank]; }
  const std::vector<int>& ranksOf(int node) const { return ranksOf_[node]; }
  // Ranks per node when every node has the same number, else 0.
  int uniformLocalSize() const;
  bool sameNode(int a, int b) const { return nodeOf_[a] == nodeOf_[b]; }
  // Equal for equal layouts (cache keys).
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  void index(std::vector<int> nodeOf);
  std::vector<int> nodeOf_, localIndex_;
  std::vector<std::vector<int>> ranksOf_;
  uint64_t fingerprint_ = 0;
};

}  // namespace chorus
