// The shm transport's small-message mailbox (transport.hpp's Mailbox): one shared segment
// per communicator holding two slots per rank. A slot is written as NCCL's LL protocol
// writes a line: every 8-byte word carries 4 bytes of data and, in its upper half, the
// message's sequence number, stored with one 8-byte store. A reader that sees the
// sequence in every word has the whole message: no separate flag, no queue, no doorbell
// ring unless the peer sleeps.
#pragma once

#include "transports/shm/doorbell.hpp"
#include "transports/transport.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace chorus::shm {

class ShmMailbox final : public Mailbox {
 public:
  // 32 bytes of call fingerprint and 2 KiB of data (each slot takes twice that: 8-byte
  // words of 4 data bytes).
  static constexpr size_t kCapacity = 32 + 2048;
  static constexpr size_t kSlotWords = kCapacity / 4;

  // Rank 0 creates the segment (before the others open it) and unlinks it once every
  // rank has mapped it. The name must not start with "chorus-" (the fault trials pick the
  // channel segments by that prefix).
  static std::unique_ptr<ShmMailbox> create(const std::string& name, int nranks);
  static std::unique_ptr<ShmMailbox> open(const std::string& name, int nranks);
  ~ShmMailbox() override;

  // `bells[r]`: rank r's doorbell (nullptr for this rank), rung when r sleeps.
  void attach(int rank, std::vector<Doorbell*> bells);

  size_t capacity() const override { return kCapacity; }
  void post(uint32_t seq, const void* data, size_t bytes) override;
  bool tryTake(int peer, uint32_t seq, void* out, size_t bytes) override;
  // Bytes of shared memory the segment takes.
  size_t segmentBytes() const { return bytes_; }

 private:
  ShmMailbox(void* base, size_t bytes, int nranks) : base_(base), bytes_(bytes), nranks_(nranks) {}
  std::atomic<uint64_t>* slot(int rank, uint32_t seq) const;

  void* base_;
  size_t bytes_;
  int nranks_;
  int rank_ = 0;
  std::vector<Doorbell*> bells_;
};

}  // namespace chorus::shm
