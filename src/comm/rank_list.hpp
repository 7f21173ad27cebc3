// Lists of ranks as the store keeps them: "3,4" (comma-separated), and back.
#pragma once

#include "settings/settings.hpp"

#include <cstdlib>
#include <string>
#include <vector>

namespace chorus::detail {

template <class Ranks>
std::string joinRanks(const Ranks& ranks) {
  std::string list;
  for (int r : ranks) list += (list.empty() ? "" : ",") + std::to_string(r);
  return list;
}

inline std::vector<int> rankList(const std::string& list) {
  std::vector<int> ranks;
  for (const std::string& item : settings::splitList(list))
    ranks.push_back(std::atoi(item.c_str()));
  return ranks;
}

}  // namespace chorus::detail
