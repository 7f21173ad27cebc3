// The shm transport's small-message mailbox (transport.hpp's Mailbox): one shared segment
// per communicator holding two slots per rank (message seq uses slot seq % 2).
// - A message of up to kLineBytes is written as NCCL's LL protocol writes a line: every
//   8-byte word carries 4 bytes and, in its upper half, the message's sequence number,
//   stored with one 8-byte store. A reader that sees the sequence in every word has the
//   whole message, and its lines travel at once, with no flag to read first.
// - A longer message goes plainly into the slot's data area: half the lines of LL words
//   (which carry 4 data bytes in 8), at the price of a flag line read before the data.
//   np 2, 128 B-2 KiB: 0.56-0.86 us against LL's 0.59-1.97 (perf/README.md).
// - The plain message's flag holds its sequence and length. A reader that expects an LL
//   message but finds a plain one (a peer that made a call of another size) takes it as
//   posted, cut or followed by zeros, and the call's fingerprint shows the difference at
//   once; so does one that expects a plain message of another length. A reader that
//   expects more LL words than were posted, or a plain message where LL words were
//   posted, waits, and the peer finds the difference in its take of ours (the first of
//   our LL words, all there; or our plain message, taken as posted) and reports it.
//   The kinds use separate areas of the slot: stale bytes of one never pass for the other.
// No queue, and no doorbell ring unless the peer sleeps.
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
  // 32 bytes of call fingerprint and 16 KiB of data (CommImpl::kMailboxReadBytes keeps
  // that to 2 ranks; 8 KiB at 3, 4 KiB up to 5, 2 KiB up to 9).
  static constexpr size_t kCapacity = 32 + 16384;
  // Messages up to this long go as LL words (fingerprint and 64 B of data).
  static constexpr size_t kLineBytes = 32 + 64;

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
  std::byte* slot(int rank, uint32_t seq) const;
  // The plain message `seq` of the slot at `at` when its flag says it is there.
  static bool takePlain(const std::byte* at, uint32_t seq, void* out, size_t bytes);

  void* base_;
  size_t bytes_;
  int nranks_;
  int rank_ = 0;
  std::vector<Doorbell*> bells_;
};

}  // namespace chorus::shm
