// Counters of the striping layer, per channel and path: payload bytes each way, bytes
// written one-sided (verbs rendezvous), bytes read and written one-sided (verbs PeerMemory:
// PeerRead, PeerWrite) and the sender's
// current weight. Channels register here; stripeReport() reads the live ones from any thread
// (relaxed atomics: a report is a snapshot, not a barrier).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace chorus::stripe {

struct PathCounters {
  std::atomic<uint64_t> sent{0};       // payload bytes sent on this path
  std::atomic<uint64_t> received{0};   // payload bytes received on this path
  std::atomic<uint32_t> weightPpm{0};  // the sender's share for this path, parts per million
  std::atomic<uint64_t> rate{0};       // the sender's rate estimate, bytes/s
  std::atomic<uint64_t> direct{0};     // bytes written one-sided on this path (rendezvous)
  std::atomic<uint64_t> read{0};       // bytes read one-sided on this path (verbs PeerMemory)
  std::atomic<uint64_t> written{0};    // bytes written into exposed memory (PeerWrite)
};

struct ChannelStats {
  std::string transport;
  int rank = 0;
  int peer = 0;
  std::vector<std::string> pathNames;  // "rail0:41234" (NIC and local port), "rxe1:qp3"
  std::unique_ptr<PathCounters[]> paths;
};

// A new entry, reported while the returned pointer lives.
std::shared_ptr<ChannelStats> registerChannel(std::string transport, int rank, int peer,
                                              std::vector<std::string> pathNames);

struct PathReport {
  std::string transport;
  int rank, peer, path;
  std::string name;
  uint64_t sent, received, rate;
  double weight;
  uint64_t direct;
  uint64_t read;
  uint64_t written;
};
std::vector<PathReport> stripeReport();
// One line per path, for logs and tools.
std::string formatReport(const std::vector<PathReport>& report);
// Logs (at INFO) one line per path of this channel: transports call it as a channel closes.
void logChannelReport(const ChannelStats& channel);

}  // namespace chorus::stripe
