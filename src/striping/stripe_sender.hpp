// The sending half of a striped byte stream: cuts what the engine hands over into chunks
// of at most `chunk` bytes, each with a ChunkHeader, and gives each chunk to the path the
// PathScheduler picks. Zero-copy, and every byte send() reports taken is in the path
// (the engine may stop driving a channel once its sends are taken): when a path takes
// part of a chunk, the stream's next bytes are the rest of that chunk, on that path. A
// full path is skipped for new chunks until it is writable again. Not thread-safe.
#pragma once

#include "striping/chunk_header.hpp"
#include "striping/path_io.hpp"
#include "striping/path_scheduler.hpp"
#include "striping/stripe_stats.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace chorus::stripe {

class StripeSender {
 public:
  // Chunks up to 64 KiB go out without fresh backlog readings (no extra system calls).
  static constexpr size_t kSampleMin = 64 << 10;

  StripeSender(int peer, int paths, size_t chunk, PathIo& io, ChannelStats* stats);

  // Takes a prefix of `data` (all of it unless every path is full); throws PeerError
  // when a path is broken.
  size_t send(const void* data, size_t bytes);
  // Whether `path` waits to be writable (its last write would block).
  bool wantsWrite(int path) const { return blocked_[path]; }
  void onWritable(int path) { blocked_[path] = false; }

  const PathScheduler& scheduler() const { return scheduler_; }

 private:
  // Writes the rest of the open chunk from `data`; returns the payload bytes written.
  size_t continueChunk(const std::byte* data, size_t bytes);
  void fail(int path, ssize_t err);
  [[noreturn]] void throwFailure() const;  // PeerError with failure_
  void sample();                           // fresh backlog readings, at most every kRateWindow / 2
  void publish();                          // weights into the stats, and a log line when they moved

  int peer_;
  size_t chunk_;
  PathIo& io_;
  ChannelStats* stats_;
  PathScheduler scheduler_;
  std::vector<char> blocked_;  // the last write would block: wait for writability
  // The chunk a path took only part of: the stream continues there.
  int openPath_ = -1;
  ChunkHeader openHeader_{};
  size_t headerLeft_ = 0;   // header bytes still to write (at its end)
  size_t payloadLeft_ = 0;  // payload bytes still to write
  uint64_t sendPos_ = 0;
  std::string failure_;
  bool unreachable_ = false;  // failure_ says its host does not answer
  Clock::time_point lastSample_{};
  Clock::time_point lastLog_{};
  std::vector<double> loggedWeights_;
};

}  // namespace chorus::stripe
