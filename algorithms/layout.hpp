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
  // The rank with local index `local` on node `node`, both taken modulo their range
  // (a uniform layout).
  int rankAt(int node, int local) const {
    const auto& ranks = ranksOf_[((node % nodes()) + nodes()) % nodes()];
    const int l = static_cast<int>(ranks.size());
    return ranks[((local % l) + l) % l];
  }
  bool sameNode(int a, int b) const { return nodeOf_[a] == nodeOf_[b]; }
  // The ring through every rank that crosses each node boundary once: node by node,
  // each node's ranks in order. ringRank(position) and ringPosition(rank) map both ways.
  int ringRank(int position) const { return ring_[position]; }
  int ringPosition(int rank) const { return ringPosition_[rank]; }
  // Equal for equal layouts (cache keys).
  uint64_t fingerprint() const { return fingerprint_; }
  // "2 nodes: 0-1 | 2-3": the ranks of each node, runs of consecutive ranks as ranges.
  // Equal layouts give equal text.
  std::string describe() const;

 private:
  void index(std::vector<int> nodeOf);
  std::vector<int> nodeOf_, localIndex_;
  std::vector<std::vector<int>> ranksOf_;
  std::vector<int> ring_, ringPosition_;
  uint64_t fingerprint_ = 0;
};

}  // namespace chorus

namespace chorus {

// The layout a hierarchical algorithm can use for these ranks: same count on every node,
// more than one node; nullptr otherwise (the algorithm falls back to a flat one).
inline const Layout* hierarchicalLayout(const Layout* layout, int nranks) {
  if (!layout || layout->nranks() != nranks || layout->uniformLocalSize() == 0 ||
      layout->nodes() == 1)
    return nullptr;
  return layout;
}

// The ring order ring algorithms follow: the layout's (each node boundary crossed once)
// or rank order without one.
struct RingOrder {
  const Layout* layout;
  int nranks;
  int rankAt(int position) const {
    const int p = ((position % nranks) + nranks) % nranks;
    return layout && layout->nranks() == nranks ? layout->ringRank(p) : p;
  }
  int positionOf(int rank) const {
    return layout && layout->nranks() == nranks ? layout->ringPosition(rank) : rank;
  }
};

}  // namespace chorus
