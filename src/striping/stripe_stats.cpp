#include "striping/stripe_stats.hpp"

#include "log.hpp"

#include <cstdio>
#include <mutex>

namespace chorus::stripe {
namespace {

std::mutex mutex;
std::vector<std::weak_ptr<ChannelStats>>& registry() {
  static std::vector<std::weak_ptr<ChannelStats>> channels;
  return channels;
}

}  // namespace

std::shared_ptr<ChannelStats> registerChannel(std::string transport, int rank, int peer,
                                              std::vector<std::string> pathNames) {
  auto stats = std::make_shared<ChannelStats>();
  stats->transport = std::move(transport);
  stats->rank = rank;
  stats->peer = peer;
  stats->paths = std::make_unique<PathCounters[]>(pathNames.size());
  stats->pathNames = std::move(pathNames);
  std::lock_guard lock(mutex);
  auto& channels = registry();
  std::erase_if(channels, [](const auto& w) { return w.expired(); });
  channels.push_back(stats);
  return stats;
}

std::vector<PathReport> stripeReport() {
  std::vector<PathReport> out;
  std::lock_guard lock(mutex);
  for (const auto& weak : registry()) {
    auto c = weak.lock();
    if (!c) continue;
    for (size_t p = 0; p < c->pathNames.size(); ++p) {
      const PathCounters& k = c->paths[p];
      out.push_back(
          {c->transport, c->rank, c->peer, static_cast<int>(p), c->pathNames[p],
           k.sent.load(std::memory_order_relaxed), k.received.load(std::memory_order_relaxed),
           k.rate.load(std::memory_order_relaxed),
           k.weightPpm.load(std::memory_order_relaxed) / 1e6,
           k.direct.load(std::memory_order_relaxed), k.read.load(std::memory_order_relaxed),
           k.written.load(std::memory_order_relaxed)});
    }
  }
  return out;
}

std::string formatReport(const std::vector<PathReport>& report) {
  std::string out;
  char line[256];
  for (const PathReport& r : report) {
    std::snprintf(
        line, sizeof(line),
        "%s rank %d -> %d path %d (%s): sent %llu B, received %llu B, direct %llu B, "
        "read %llu B, written %llu B, weight %.0f%%, %.1f MB/s\n",
        r.transport.c_str(), r.rank, r.peer, r.path, r.name.c_str(),
        static_cast<unsigned long long>(r.sent), static_cast<unsigned long long>(r.received),
        static_cast<unsigned long long>(r.direct), static_cast<unsigned long long>(r.read),
        static_cast<unsigned long long>(r.written), 100 * r.weight, r.rate / 1e6);
    out += line;
  }
  return out;
}

void logChannelReport(const ChannelStats& channel) {
  if (logLevel() < LogLevel::Info) return;
  auto report = stripeReport();
  std::erase_if(report, [&](const auto& r) {
    return r.rank != channel.rank || r.peer != channel.peer || r.transport != channel.transport;
  });
  for (const PathReport& path : report) {  // one log line each, so each has the log's prefix
    std::string line = formatReport({path});
    line.pop_back();
    logf(LogLevel::Info, "%s", line.c_str());
  }
}

}  // namespace chorus::stripe
