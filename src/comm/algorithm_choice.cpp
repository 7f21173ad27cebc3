#include "comm/algorithm_choice.hpp"

#include <chorus/chorus.hpp>

#include <algorithm>
#include <cctype>
#include <string>

namespace chorus {
namespace {

constexpr std::array<Collective, 7> kAll = {
    Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::Broadcast,
    Collective::Reduce,    Collective::Send,      Collective::Recv};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
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

}  // namespace

AlgorithmChoice::AlgorithmChoice() {
  for (Collective c : kAll) chosen_[static_cast<size_t>(c)] = &defaultAlgorithm(c);
}

void AlgorithmChoice::apply(std::string_view spec) {
  spec = trim(spec);
  if (spec.empty() || lower(spec) == "auto") return;
  // Point-to-point has only "direct": a global name applies to the collectives only.
  std::array<Collective, 5> collectives = {Collective::AllReduce, Collective::AllGather,
                                           Collective::ReduceScatter, Collective::Broadcast,
                                           Collective::Reduce};
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view item = trim(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (item.empty()) continue;
    std::string target;
    size_t colon = item.find(':');
    if (colon != std::string_view::npos) {
      target = lower(trim(item.substr(0, colon)));
      item = trim(item.substr(colon + 1));
    }
    bool exclude = !item.empty() && item.front() == '^';
    if (exclude) item.remove_prefix(1);
    std::string name = lower(item);
    bool matchedCollective = false;
    for (Collective c : collectives) {
      if (!target.empty() && lower(toString(c)) != target) continue;
      matchedCollective = true;
      size_t slot = static_cast<size_t>(c);
      if (exclude) {
        if (chosen_[slot]->name != name) continue;
        const Algorithm* other = nullptr;
        for (const Algorithm& a : allAlgorithms())
          if (a.collective == c && a.name != name) other = &a;
        if (!other)
          throw Error(Result::InvalidArgument, "CHORUS_ALGO: excluding '" + name + "' leaves no " +
                                                   std::string(toString(c)) + " algorithm");
        chosen_[slot] = other;
        continue;
      }
      const Algorithm* a = findAlgorithm(c, name);
      if (!a) {
        if (target.empty()) continue;  // a global name need not exist for every collective
        throw Error(Result::InvalidArgument, "CHORUS_ALGO: unknown " + std::string(toString(c)) +
                                                 " algorithm '" + name + "' (known: " +
                                                 knownNames(c) + ")");
      }
      chosen_[slot] = a;
    }
    if (!matchedCollective)
      throw Error(Result::InvalidArgument,
                  "CHORUS_ALGO: unknown collective '" + target +
                      "' (allreduce, allgather, reducescatter, broadcast, reduce)");
    if (target.empty() && !exclude) {
      bool any = false;
      for (Collective c : collectives) any |= findAlgorithm(c, name) != nullptr;
      if (!any) throw Error(Result::InvalidArgument, "CHORUS_ALGO: unknown algorithm '" + name + "'");
    }
  }
}

const Algorithm& AlgorithmChoice::pick(Collective collective) const {
  return *chosen_[static_cast<size_t>(collective)];
}

}  // namespace chorus
