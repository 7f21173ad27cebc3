#include "sim/max_min.hpp"

#include <algorithm>
#include <queue>
#include <utility>

namespace chorus::sim {

std::vector<double> maxMinRates(std::span<const int> links, std::span<const size_t> begin,
                                std::span<const double> capacity) {
  const size_t flows = begin.empty() ? 0 : begin.size() - 1;
  // The links the flows cross, densely numbered, with their users.
  std::vector<int> local(capacity.size(), -1);
  std::vector<int> global, users;
  std::vector<int> path(links.size());
  for (size_t k = 0; k < links.size(); ++k) {
    int& l = local[links[k]];
    if (l < 0) {
      l = static_cast<int>(global.size());
      global.push_back(links[k]);
      users.push_back(0);
    }
    ++users[l];
    path[k] = l;
  }
  const size_t nlinks = global.size();
  std::vector<size_t> first(nlinks + 1, 0);
  for (size_t l = 0; l < nlinks; ++l) first[l + 1] = first[l] + users[l];
  std::vector<int> onLink(first[nlinks]);
  std::vector<size_t> fillAt(first.begin(), first.end() - 1);
  for (size_t f = 0; f < flows; ++f)
    for (size_t k = begin[f]; k < begin[f + 1]; ++k)
      onLink[fillAt[path[k]]++] = static_cast<int>(f);
  std::vector<double> remaining(nlinks);
  for (size_t l = 0; l < nlinks; ++l) remaining[l] = capacity[global[l]];
  // Progressive filling: the link with the smallest fair share fixes its flows' rates.
  using Entry = std::pair<double, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  for (size_t l = 0; l < nlinks; ++l) heap.push({remaining[l] / users[l], static_cast<int>(l)});
  std::vector<double> rate(flows, 0);
  std::vector<bool> frozen(flows, false);
  while (!heap.empty()) {
    auto [share, l] = heap.top();
    heap.pop();
    if (users[l] == 0 || std::max(remaining[l], 0.0) / users[l] != share) continue;  // stale
    for (size_t i = first[l]; i < first[l + 1]; ++i) {
      const int f = onLink[i];
      if (frozen[f]) continue;
      frozen[f] = true;
      rate[f] = share;
      for (size_t k = begin[f]; k < begin[f + 1]; ++k) {
        const int m = path[k];
        remaining[m] -= share;
        if (--users[m] > 0 && m != l) heap.push({std::max(remaining[m], 0.0) / users[m], m});
      }
    }
  }
  return rate;
}

}  // namespace chorus::sim
