// Small all-reduce through the transport's Mailbox (transport.hpp): every rank posts its
// call's fingerprint and input as one message, takes every peer's message and reduces
// all of them in rank order, so every rank computes the same bits. No schedule, no
// queue, no per-peer header exchange: one post and n - 1 reads of a few cache lines.
// The engine's guarantees hold as for any op: progress is checked by the same stall
// deadline and peer checks, a peer whose fingerprint differs gets "mismatched calls", and
// a peer that made another call on the channels instead is caught by its call header.
#include "engine/engine.hpp"
#include "engine/wire_header.hpp"
#include "kernels/reduce.hpp"

#include <cstddef>
#include <cstring>

namespace chorus {

using detail::OpState;
using detail::WireHeader;

namespace {
size_t roundUp8(size_t v) { return (v + 7) / 8 * 8; }
}  // namespace

// A mailbox op has no steps: op.progress stays empty and advanceMailbox marks it done.
void Engine::submitMailbox(std::shared_ptr<OpState> op) {
  if (refuseAfterFailure(*op)) return;
  op->mailboxSeq = ++mailboxCount_;
  if (inFlight_.empty()) progressUnstamped_ = true;
  mailboxOps_.push_back(op.get());
  inFlight_.push_back(std::move(op));
}

// A peer whose message is not there but whose channel holds data while this rank expects
// none from it made another call (it sends its fingerprint ahead of its data). Throws the
// mismatch. Reads the slot again after seeing the data: the peer posts before it sends
// anything later, so a message that is there by then counts (returns true: it is in
// `slot`). Runs on the polls that read the clock (Engine::poll), so a mismatch is found
// within a few polls, and always before the rank yields or sleeps.
bool Engine::checkStrayCall(OpState& op, int peer, std::byte* slot, size_t bytes) {
  if (!recvQueue_[peer].empty()) return false;
  WireHeader theirs;  // whole, also where it straddles the end of the channel's ring
  if (transport_.channel(peer).peekCopy(reinterpret_cast<std::byte*>(&theirs), sizeof theirs) <
      sizeof theirs)
    return false;
  if (transport_.mailbox()->tryTake(peer, op.mailboxSeq, slot, bytes)) return true;
  if (auto wrong = detail::mismatch(op, theirs, peer)) throw Error(Result::InvalidUsage, *wrong);
  return false;
}

bool Engine::advanceMailbox(bool checkStrays) {
  OpState& op = *mailboxOps_.front();
  Mailbox& box = *transport_.mailbox();
  const int nranks = config_.nranks;
  const size_t dataBytes = op.count * op.elementSize;
  const size_t bytes = sizeof(WireHeader) + dataBytes;
  const size_t stride = roundUp8(bytes);
  bool moved = false;
  if (!op.mailboxPosted) {
    gathered_.resize(stride * nranks);
    taken_.assign(nranks, 0);
    taken_[config_.rank] = 1;
    takenLeft_ = nranks - 1;
    std::byte* const out = gathered_.data() + stride * config_.rank;
    const WireHeader header = headerOf(op);
    std::memcpy(out, &header, sizeof header);
    std::memcpy(out + sizeof header, op.input, dataBytes);
    box.post(op.mailboxSeq, out, bytes);
    op.mailboxPosted = true;
    moved = true;
  }
  const std::byte* const mine = gathered_.data() + stride * config_.rank;
  for (int peer = 0; peer < nranks && takenLeft_ > 0; ++peer) {
    if (taken_[peer]) continue;
    std::byte* slot = gathered_.data() + stride * peer;
    if (!box.tryTake(peer, op.mailboxSeq, slot, bytes) &&
        !(checkStrays && checkStrayCall(op, peer, slot, bytes)))
      continue;
    // The same call has the same fingerprint up to the sequence number (which counts every
    // collective and may differ between ranks): equal bytes need no field by field check.
    if (std::memcmp(slot, mine, offsetof(WireHeader, sequence)) != 0) {
      WireHeader theirs;
      std::memcpy(&theirs, slot, sizeof theirs);
      if (auto wrong = detail::mismatch(op, theirs, peer))
        throw Error(Result::InvalidUsage, *wrong);
    }
    taken_[peer] = 1;
    --takenLeft_;
    moved = true;
  }
  if (takenLeft_ > 0) return moved;

  auto data = [&](int r) { return gathered_.data() + stride * r + sizeof(WireHeader); };
  if (nranks == 1) {
    std::memcpy(op.output, data(0), dataBytes);
  } else {
    kernels::reduce(op.type, op.op, op.output, data(0), data(1), op.count);
    for (int r = 2; r < nranks; ++r)
      kernels::reduce(op.type, op.op, op.output, op.output, data(r), op.count);
    if (op.op == RedOp::Avg) kernels::divide(op.type, op.output, op.output, op.count, nranks);
  }
  mailboxOps_.pop_front();
  op.done = true;
  return true;
}

}  // namespace chorus
