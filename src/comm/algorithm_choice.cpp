#include "comm/algorithm_choice.hpp"

#include "settings/settings.hpp"

#include <chorus/chorus.hpp>

#include <algorithm>
#include <cctype>

namespace chorus {
namespace {

// Point-to-point has only "direct": specs apply to the collectives.
constexpr std::array<Collective, 6> kCollectivesWithChoice = {
    Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
    Collective::Broadcast, Collective::Reduce,    Collective::AllToAll};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string knownNames(Collective c) {
  std::string names;
  for (const Algorithm& a : allAlgorithms())
    if (a.collective == c) names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names;
}

[[noreturn]] void bad(const std::string& what) {
  throw Error(Result::InvalidArgument, "CHORUS_ALGO: " + what);
}

}  // namespace

void AlgorithmChoice::apply(std::string_view spec) {
  spec = trim(spec);
  if (spec.empty() || lower(spec) == "auto") return;
  auto next = *this;  // all or nothing: a bad spec changes nothing
  for (const std::string& entry : settings::splitList(spec)) {
    std::string_view item = trim(entry);
    if (item.empty()) continue;
    std::string target;
    if (size_t colon = item.find(':'); colon != std::string_view::npos) {
      target = lower(trim(item.substr(0, colon)));
      item = trim(item.substr(colon + 1));
    }
    const bool exclude = !item.empty() && item.front() == '^';
    if (exclude) item.remove_prefix(1);
    const std::string name = lower(item);
    bool matchedCollective = false, matchedAlgorithm = false;
    for (Collective c : kCollectivesWithChoice) {
      if (!target.empty() && lower(toString(c)) != target) continue;
      matchedCollective = true;
      if (name == "auto" && !exclude) {  // back to the automatic choice
        next.forced_[static_cast<size_t>(c)] = nullptr;
        matchedAlgorithm = true;
        continue;
      }
      const Algorithm* a = findAlgorithm(c, name);
      if (!a) {
        if (!target.empty())
          bad("unknown " + std::string(toString(c)) + " algorithm '" + name +
              "' (known: " + knownNames(c) + ")");
        continue;  // a name for every collective need not exist for each one
      }
      matchedAlgorithm = true;
      size_t slot = static_cast<size_t>(c);
      if (exclude) {
        next.excluded_[slot].push_back(name);
        if (next.forced_[slot] == a) next.forced_[slot] = nullptr;
      } else {
        next.forced_[slot] = a;
        std::erase(next.excluded_[slot], name);
      }
    }
    if (!matchedCollective)
      bad("unknown collective '" + target +
          "' (allreduce, allgather, reducescatter, broadcast, reduce, alltoall)");
    if (!matchedAlgorithm) bad("unknown algorithm '" + name + "'");
  }
  for (Collective c : kCollectivesWithChoice) {
    size_t slot = static_cast<size_t>(c);
    bool anyLeft = false;
    for (const Algorithm& a : allAlgorithms())
      anyLeft |= a.collective == c && !a.oneSided &&
                 std::count(next.excluded_[slot].begin(), next.excluded_[slot].end(), a.name) == 0;
    if (!anyLeft) bad("the exclusions leave no " + std::string(toString(c)) + " algorithm");
  }
  for (Collective c : kCollectivesWithChoice) {
    size_t slot = static_cast<size_t>(c);
    std::erase_if(next.candidates_[slot] = allCandidates()[slot], [&](const Algorithm* a) {
      return std::count(next.excluded_[slot].begin(), next.excluded_[slot].end(), a->name) > 0;
    });
  }
  *this = std::move(next);
}

bool AlgorithmChoice::excluded(const Algorithm& algorithm) const {
  const auto& names = excluded_[static_cast<size_t>(algorithm.collective)];
  return std::count(names.begin(), names.end(), algorithm.name) > 0;
}

std::array<std::vector<const Algorithm*>, AlgorithmChoice::kCollectives>
AlgorithmChoice::allCandidates() {
  std::array<std::vector<const Algorithm*>, kCollectives> all;
  for (const Algorithm& a : allAlgorithms())
    if (!a.oneSided) all[static_cast<size_t>(a.collective)].push_back(&a);
  return all;
}

}  // namespace chorus
