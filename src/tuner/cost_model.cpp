#include "tuner/cost_model.hpp"

#include "algorithms/layout.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

namespace chorus {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct CacheKey {
  const Algorithm* algorithm;
  Collective collective;
  int nranks;
  size_t count, elementSize, sliceBytes;
  LinkModel link, inter;
  uint64_t layout;
  auto tie() const {
    auto fields = [](const LinkModel& m) {
      return std::tie(m.latencyUs, m.bytesPerUs, m.reduceBytesPerUs, m.copyBytesPerUs, m.overheadUs,
                      m.transportBytesPerUs, m.nicBytesPerUs, m.cpuSends, m.nicBurstBytes,
                      m.channelBytes, m.overheadShare, m.callShare, m.gapUs, m.sendsHoldACore,
                      m.poolCores, m.poolOverheadAtCallShare, m.poolSpinUs, m.poolBoundCores);
    };
    return std::tuple_cat(
        std::tie(algorithm, collective, nranks, count, elementSize, sliceBytes, layout),
        fields(link), fields(inter));
  }
  bool operator<(const CacheKey& o) const { return tie() < o.tie(); }
};

std::mutex cacheMutex;
std::map<CacheKey, double> cache;
constexpr size_t kCacheEntries = 1 << 14;

std::string formatMicros(double us) {
  char text[32];
  if (us == kInfinity) return "deadlock";
  if (us < 1e4)
    std::snprintf(text, sizeof(text), "%.1f", us);
  else
    std::snprintf(text, sizeof(text), "%.0f", us);
  return text;
}

std::string formatBytes(size_t bytes) {
  char text[32];
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0)
    std::snprintf(text, sizeof(text), "%zu MiB", bytes >> 20);
  else if (bytes >= 1024 && bytes % 1024 == 0)
    std::snprintf(text, sizeof(text), "%zu KiB", bytes >> 10);
  else
    std::snprintf(text, sizeof(text), "%zu B", bytes);
  return text;
}

}  // namespace

ReplayResult replaySchedules(std::span<const Schedule> schedules, size_t elementSize,
                             const LinkModel& link, size_t sliceBytes) {
  sim::LinkClassNetwork net(static_cast<int>(schedules.size()), link);
  return sim::replay(schedules, elementSize, net, 0, sliceBytes);
}

double predictMicros(const Algorithm& algorithm, Collective collective, int nranks, size_t count,
                     size_t elementSize, const LinkModel& link, const Layout* layout,
                     const LinkModel* inter, size_t sliceBytes) {
  if (layout && layout->nranks() != nranks) layout = nullptr;
  if (nranks < 1) return kInfinity;
  if (collective == Collective::Send || collective == Collective::Recv) {
    // One message: the sender's and the receiver's schedules, replayed as a pair.
    const Algorithm* send = collective == Collective::Send
                                ? &algorithm
                                : findAlgorithm(Collective::Send, algorithm.name);
    const Algorithm* recv = collective == Collective::Recv
                                ? &algorithm
                                : findAlgorithm(Collective::Recv, algorithm.name);
    if (!send || !recv) return kInfinity;
    const Schedule pair[] = {send->build({Collective::Send, 0, 2, count, 1, nullptr}),
                             recv->build({Collective::Recv, 1, 2, count, 0, nullptr})};
    sim::LinkClassNetwork net(2, link);
    return sim::replay(pair, elementSize, net).micros;
  }
  const CacheKey key{&algorithm,
                     collective,
                     nranks,
                     count,
                     elementSize,
                     sliceBytes,
                     link,
                     inter ? *inter : link,
                     layout ? layout->fingerprint() : 0};
  {
    std::lock_guard lock(cacheMutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  std::vector<Schedule> schedules;
  schedules.reserve(nranks);
  for (int r = 0; r < nranks; ++r)
    schedules.push_back(algorithm.build({collective, r, nranks, count, 0, layout}));
  sim::LinkClassNetwork net(nranks, link, layout, inter);
  const double micros = sim::replay(schedules, elementSize, net, 0, sliceBytes).micros;
  std::lock_guard lock(cacheMutex);
  if (cache.size() >= kCacheEntries) cache.clear();
  cache.emplace(key, micros);
  return micros;
}

std::vector<Prediction> rankAlgorithms(Collective collective, int nranks, size_t count,
                                       size_t elementSize, const LinkModel& link,
                                       const Layout* layout, const LinkModel* inter,
                                       size_t sliceBytes) {
  std::vector<Prediction> ranked;
  for (const Algorithm& a : allAlgorithms())
    if (a.collective == collective && !a.oneSided)  // chosen apart (Tuner::chooseOneSided)
      ranked.push_back({&a, predictMicros(a, collective, nranks, count, elementSize, link, layout,
                                          inter, sliceBytes)});
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Prediction& a, const Prediction& b) { return a.micros < b.micros; });
  return ranked;
}

std::vector<size_t> defaultExplainSizes() {
  std::vector<size_t> sizes;
  for (size_t b = 8; b <= (64u << 20); b *= 4) sizes.push_back(b);
  sizes.push_back(64u << 20);
  return sizes;
}

std::string explainTable(Collective collective, int nranks, const LinkModel& link,
                         std::span<const size_t> sizes, size_t elementSize) {
  std::vector<const Algorithm*> columns;
  for (const Algorithm& a : allAlgorithms())
    if (a.collective == collective && !a.oneSided) columns.push_back(&a);
  char line[256];
  std::snprintf(line, sizeof(line),
                "# %s, %d ranks, link %.1f us %.2f GB/s, reduce %.1f GB/s, copy %.1f GB/s: "
                "predicted us, * = best\n",
                toString(collective), nranks, link.latencyUs, link.bytesPerUs / 1000,
                link.reduceBytesPerUs / 1000, link.copyBytesPerUs / 1000);
  std::string text = line;
  std::snprintf(line, sizeof(line), "%12s", "size");
  text += line;
  for (const Algorithm* a : columns) {
    std::snprintf(line, sizeof(line), " %12s", a->name);
    text += line;
  }
  text += "  best\n";
  for (size_t bytes : sizes) {
    const size_t count = elementSize ? bytes / elementSize : 0;
    std::vector<double> times;
    size_t best = 0;
    for (size_t i = 0; i < columns.size(); ++i) {
      times.push_back(predictMicros(*columns[i], collective, nranks, count, elementSize, link));
      if (times[i] < times[best]) best = i;
    }
    std::snprintf(line, sizeof(line), "%12s", formatBytes(count * elementSize).c_str());
    text += line;
    for (size_t i = 0; i < columns.size(); ++i) {
      std::snprintf(line, sizeof(line), " %11s%c", formatMicros(times[i]).c_str(),
                    i == best ? '*' : ' ');
      text += line;
    }
    text += "  ";
    text += columns.empty() ? "-" : columns[best]->name;
    text += '\n';
  }
  return text;
}

std::string explainTable(Collective collective, int nranks, const LinkModel& link) {
  const std::vector<size_t> sizes = defaultExplainSizes();
  return explainTable(collective, nranks, link, sizes);
}

std::string explainChoice(Collective collective, int nranks, size_t count, size_t elementSize,
                          const LinkModel& link) {
  std::string text = std::string(toString(collective)) + " " + std::to_string(nranks) + " ranks " +
                     std::to_string(count * elementSize) + " B:";
  bool first = true;
  for (const Prediction& p : rankAlgorithms(collective, nranks, count, elementSize, link)) {
    text += first ? " " : ", ";
    text += std::string(p.algorithm->name) + " " + formatMicros(p.micros) + " us";
    if (first) text += " (best predicted)";
    first = false;
  }
  return text;
}

}  // namespace chorus
