#include "engine/wire_header.hpp"

#include "algorithms/algorithms.hpp"

#include <cstdio>

namespace chorus::detail {
namespace {

bool reduces(Collective c) {
  return c == Collective::AllReduce || c == Collective::ReduceScatter || c == Collective::Reduce ||
         c == Collective::ReduceScatterV;
}
bool rooted(Collective c) {
  return c == Collective::Broadcast || c == Collective::Reduce || c == Collective::Gather ||
         c == Collective::Scatter;
}

}  // namespace

std::string describeHeader(const WireHeader& h) {
  const auto collective = static_cast<Collective>(h.collective);
  const auto algorithms = allAlgorithms();
  const char* algorithm = h.algorithm < algorithms.size()             ? algorithms[h.algorithm].name
                          : h.algorithm == OpState::kMailboxAlgorithm ? "mailbox"
                                                                      : "?";
  char text[200];
  std::snprintf(text, sizeof text, "%s #%llu (%llu x %s%s%s, %s%s)", toString(collective),
                static_cast<unsigned long long>(h.sequence),
                static_cast<unsigned long long>(h.count), toString(static_cast<DataType>(h.type)),
                reduces(collective) ? " " : "",
                reduces(collective) ? toString(static_cast<RedOp>(h.op)) : "", algorithm,
                rooted(collective) ? (", root " + std::to_string(h.root)).c_str() : "");
  return text;
}

std::optional<std::string> mismatch(const OpState& mine, const WireHeader& theirs, int peer) {
  // Checked for every message of a small call: no string is built unless it fails.
  auto who = [peer] { return "rank " + std::to_string(peer); };
  if (theirs.magic != WireHeader::kMagic)
    return "the stream from " + who() +
           " is out of step (no call header where one was due): the ranks called different "
           "collectives earlier, or the data was damaged";
  const auto c = static_cast<Collective>(theirs.collective);
  bool same;
  if (mine.collective == Collective::Recv || mine.collective == Collective::Send) {
    const Collective partner =
        mine.collective == Collective::Recv ? Collective::Send : Collective::Recv;
    same = c == partner && theirs.count == mine.count &&
           theirs.type == static_cast<uint8_t>(mine.type);
  } else {
    same = c == mine.collective && theirs.count == mine.count &&
           theirs.type == static_cast<uint8_t>(mine.type) &&
           (!reduces(c) || theirs.op == static_cast<uint8_t>(mine.op)) &&
           (!rooted(c) || theirs.root == mine.root) &&
           theirs.algorithm == static_cast<uint8_t>(mine.algorithmIndex) &&
           theirs.countsHash == mine.countsHash;
  }
  if (same) return std::nullopt;
  const bool onlyCounts =
      c == mine.collective && theirs.count == mine.count && theirs.countsHash != mine.countsHash;
  return "mismatched calls: " + who() + " called " + describeHeader(theirs) +
         (onlyCounts ? " with other per-rank counts" : "");
}

}  // namespace chorus::detail
