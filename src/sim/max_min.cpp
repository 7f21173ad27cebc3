#include "sim/max_min.hpp"

#include <algorithm>
#include <limits>
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

namespace {

// Numbers the connected components of the flows `active` (flows joined when they share a
// link) into component[f], 0, 1, ...; returns how many.
int componentsOf(std::span<const int> links, std::span<const size_t> begin, size_t nlinks,
                 std::span<const int> active, std::vector<int>& component) {
  std::vector<int> parent(nlinks, -1);  // union-find over links; -1: unused
  auto root = [&](int l) {
    while (parent[l] != l) l = parent[l] = parent[parent[l]];
    return l;
  };
  for (const int f : active) {
    int r = -1;
    for (size_t k = begin[f]; k < begin[f + 1]; ++k) {
      const int l = links[k];
      if (parent[l] < 0) parent[l] = l;
      const int q = root(l);
      if (r < 0)
        r = q;
      else if (q != r)
        parent[q] = r;
    }
  }
  std::vector<int> number(nlinks, -1);
  int count = 0;
  for (const int f : active) {
    if (begin[f] == begin[f + 1]) {  // on no link: a component of its own
      component[f] = count++;
      continue;
    }
    int& n = number[root(links[begin[f]])];
    if (n < 0) n = count++;
    component[f] = n;
  }
  return count;
}

}  // namespace

std::vector<double> maxMinFinish(std::span<const int> links, std::span<const size_t> begin,
                                 std::span<const double> capacity, std::span<const int> transferOf,
                                 std::span<const double> bytes) {
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  constexpr int kSolves = kFluidSolves;
  constexpr double kTogether = kFluidTogether;
  const size_t flows = begin.empty() ? 0 : begin.size() - 1, transfers = bytes.size();
  std::vector<double> finish(transfers, 0), left(bytes.begin(), bytes.end()), rate(transfers);
  std::vector<int> flowsOf(transfers, 0);
  for (size_t f = 0; f < flows; ++f) ++flowsOf[transferOf[f]];
  const bool single = std::all_of(flowsOf.begin(), flowsOf.end(), [](int n) { return n <= 1; });
  // The flows still running (their transfer has bytes left) and their links.
  std::vector<int> active;
  for (size_t f = 0; f < flows; ++f)
    if (bytes[transferOf[f]] > 0) active.push_back(static_cast<int>(f));
  // Max-min splits over the connected components of flows joined by shared links: when
  // transfers end, only the flows of their components can change shares, so only those
  // are solved again (a component may split as flows leave; solving the whole of it is
  // still exact). component[f]: its component's number, from the links of the flows the
  // first solve leaves running (numbered then: the first solve takes every flow).
  std::vector<int> component(flows, 0);
  std::vector<char> dirty(1, 1);
  std::vector<double> flowShare(flows, 0);
  std::vector<int> solved;
  std::vector<int> subLinks;
  std::vector<size_t> subBegin;
  std::vector<char> running(transfers, 0);
  double now = 0;
  int solves = 0;
  while (!active.empty()) {
    solved.clear();
    subLinks.clear();
    subBegin.assign(1, 0);
    for (const int f : active) {
      if (!dirty[component[f]]) continue;
      solved.push_back(f);
      subLinks.insert(subLinks.end(), links.begin() + begin[f], links.begin() + begin[f + 1]);
      subBegin.push_back(subLinks.size());
    }
    const std::vector<double> share = maxMinRates(subLinks, subBegin, capacity);
    for (size_t i = 0; i < solved.size(); ++i) flowShare[solved[i]] = share[i];
    for (const int f : active) {
      rate[transferOf[f]] = 0;
      running[transferOf[f]] = 1;
    }
    for (const int f : active) rate[transferOf[f]] += flowShare[f];
    std::fill(dirty.begin(), dirty.end(), 0);
    // The next completion; with one flow a transfer and equal bytes left, the last one.
    // After kSolves solves the rest keep their shares to the end (a bound on the cost: a
    // full replay's step of 100,000 flows may have as many distinct shares).
    const bool last = ++solves >= kSolves;
    double step = kInfinity, first = -1;
    bool equal = single;
    for (const int f : active) {
      const int t = transferOf[f];
      if (rate[t] > 0) step = std::min(step, left[t] / rate[t]);
      if (first < 0) first = left[t];
      equal = equal && left[t] == first;
    }
    // Each running transfer once (running: not yet seen at this event): finished now, or
    // its bytes left after the step; then its flows go or stay with it (a finished one's
    // component is solved again).
    for (const int f : active) {
      const int t = transferOf[f];
      if (!running[t]) continue;
      running[t] = 0;
      const double need = rate[t] > 0 ? left[t] / rate[t] : kInfinity;
      if (equal || last || need == kInfinity || need <= step * (1 + kTogether)) {
        finish[t] = now + need;
        left[t] = 0;
      } else {
        left[t] -= rate[t] * step;
      }
    }
    if (solves == 1 &&
        std::any_of(active.begin(), active.end(), [&](int f) { return left[transferOf[f]] > 0; }))
      dirty.assign(componentsOf(links, begin, capacity.size(), active, component), 0);
    size_t kept = 0;
    for (const int f : active) {
      if (left[transferOf[f]] > 0)
        active[kept++] = f;
      else
        dirty[component[f]] = 1;
    }
    active.resize(kept);
    now += step;
  }
  return finish;
}

}  // namespace chorus::sim
