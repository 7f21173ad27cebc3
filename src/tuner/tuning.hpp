// The figures the tuner works from, per link class and local rank count: a LinkModel plus
// the reduction rate of each data type. They come from a tune file (CHORUS_TUNE_FILE,
// written by `chorus-perf --calibrate`), the probe at communicator creation, or the
// defaults in link_model.hpp.
//
// Tune file: one entry per line, '#' starts a comment, fields are key=value:
//   shm ranks=8 latency_us=9.5 bytes_per_us=1400 copy_bytes_per_us=9000
//       reduce_bytes_per_us=6000 reduce.bfloat16=1800 ...     (one line in the file)
// Optional: overhead_us, transport_bytes_per_us (a transport's CPU copy rate at each end:
// tcp; absent or 0: none), and nic_bytes_per_us (between nodes: the node's NIC, which the
// flows leaving or entering the node share; absent or 0: every rank has its own port),
// nic_burst_bytes (with nic_bytes_per_us: the bytes a rate-limited NIC's token bucket lets
// pass at once after an idle spell, CHORUS_NIC_BURST; absent or 0: none),
// cpu_sends (1: the sender's CPU moves the bytes, LinkModel::cpuSends; absent: the link
// class's own, 1 for shm), and overhead_share and call_share (the share of a core a rank had
// when overhead_us was measured, and has in a call: LinkModel::callOverheadUs; absent or 0:
// overhead_us as given), and gap_us (LogGP's g, the least time between a rank's
// consecutive messages on the link, at overhead_share: LinkModel::gapUs; absent: 0).
// `ranks` is the number of ranks on the host the figures were measured with (they share
// its cores and memory); a lookup takes the entry with the nearest rank count.
#pragma once

#include "tuner/link_model.hpp"

#include <chorus/chorus.hpp>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace chorus {

struct Tuning {
  LinkClass link = LinkClass::Shm;
  int ranks = 0;  // local ranks the figures were measured with (0: any)
  LinkModel model;
  // Bytes of result per us for each DataType (index = its value); 0: model.reduceBytesPerUs.
  std::array<double, chorusNumTypes> reduceBytesPerUs{};
  std::string source = "defaults";  // where the figures came from, for logs
  // All-reduce: the fastest algorithm measured at these sizes (bytes) by
  // `chorus-perf --calibrate` on `ranks` ranks; where the model and the measurement
  // disagree, the measurement wins (nearest size on a log scale). Tune file:
  // best=8:oneshot,512:rd,...
  std::vector<std::pair<size_t, std::string>> measuredBest;

  // The model with the reduction rate of `type`.
  LinkModel forType(DataType type) const;
  // One tune-file line (no newline).
  std::string toLine() const;
  bool operator==(const Tuning&) const = default;
};

Tuning defaultTuning(LinkClass link);

// Parses a whole tune file. Throws Error(InvalidArgument) naming the line on bad input.
std::vector<Tuning> parseTuneFile(std::string_view text, std::string_view name = "tune file");
// Reads and parses `path`; throws on a missing or bad file.
std::vector<Tuning> readTuneFile(const std::string& path);
// Replaces the entry with the same link and ranks (or adds it) and writes the file.
void updateTuneFile(const std::string& path, const Tuning& tuning);

// The entry of this link class with the rank count nearest `ranks` (ties: the smaller).
std::optional<Tuning> pickTuning(const std::vector<Tuning>& entries, LinkClass link, int ranks);

}  // namespace chorus
