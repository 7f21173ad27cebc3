// Shared-memory transport for ranks of one host. Each rank owns a FIFO segment (a memfd,
// fifo_segment.hpp) holding one inbound FIFO per peer that sends to it; a sender copies
// into the receiver's FIFO and the receiver reduces straight out of it (one copy per hop,
// the reduction fused with the read). A segment is mapped by a peer only when the peer
// first sends to its owner, and each FIFO is carved out when first used, so memory and
// mappings grow with the peers a rank's schedules use (a ring: two), not with the ranks.
// The directory (directory.hpp) and the mailbox are the only segments every rank maps;
// both are unlinked once every rank has mapped them, and memfds have no name, so nothing
// is left behind in /dev/shm even if a rank is killed later.
#include "transports/shm/directory.hpp"
#include "transports/shm/doorbell.hpp"
#include "transports/shm/fifo.hpp"
#include "transports/shm/fifo_segment.hpp"
#include "transports/shm/mailbox.hpp"
#include "transports/shm/shm_peer_memory.hpp"

#include "bootstrap/process_watch.hpp"
#include "errors.hpp"
#include "store/barrier.hpp"
#include "store/store.hpp"
#include "transports/transport.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <random>
#include <vector>

namespace chorus {
namespace {

class ShmTransport;

// A peer's channel: the outbound FIFO lives in the peer's segment (mapped, and the FIFO
// claimed, on the first trySend), the inbound one in ours (there once the peer claimed it).
class ShmChannel : public Channel {
 public:
  ShmChannel(ShmTransport& owner, int peer, shm::Doorbell* peerBell)
      : owner_(owner), peer_(peer), peerBell_(peerBell) {}
  size_t trySend(const void* data, size_t bytes) override;
  std::span<const std::byte> peek() override;
  size_t peekCopy(std::byte* out, size_t bytes) override;
  void consume(size_t bytes) override {
    if (!in_) {
      if (bytes == 0) return;
      throw Error(Result::InternalError, "shm: consume beyond what peek() returned");
    }
    in_->release(bytes);
    peerBell_->ring();  // the sender may be waiting for room
  }

 private:
  ShmTransport& owner_;
  int peer_;
  shm::Doorbell* peerBell_;
  std::optional<shm::Fifo> out_, in_;
};

class ShmTransport : public Transport {
 public:
  explicit ShmTransport(const TransportContext& ctx)
      : rank_(ctx.rank), nranks_(ctx.nranks), sizing_(shm::FifoSizing::fromSettings(ctx.nranks)) {
    Store& store = *ctx.store;
    // Every rank must share this host: each compares itself with rank 0 (O(1) store keys
    // per rank, not one per peer); all learn the count at the "shm/created" barrier.
    const auto host0 = store.get("host/0", ctx.deadline);
    const bool foreign =
        std::string(reinterpret_cast<const char*>(host0.data()), host0.size()) != ctx.hostId;
    store.add("shm/foreign", foreign ? 1 : 0);
    std::string token;
    if (rank_ == 0) {
      std::random_device rd;
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%d-%08x", static_cast<int>(getpid()), rd());
      token = buf;
      store.set("shm/token", std::as_bytes(std::span(token)));
    } else {
      auto v = store.get("shm/token", ctx.deadline);
      token.assign(reinterpret_cast<const char*>(v.data()), v.size());
    }
    const std::string segmentName = "chorus-" + token + "-" + std::to_string(rank_);
    own_ = shm::FifoSegment::create(segmentName.c_str(), nranks_, sizing_);
    const std::string directoryName = "/chorusdir-" + token;
    const std::string mailboxName = "/chorusmbox-" + token;
    if (rank_ == 0) {
      names_ = {directoryName, mailboxName};
      directory_ = shm::Directory::create(directoryName, nranks_);
      mailbox_ = shm::ShmMailbox::create(mailboxName, nranks_);
    }
    storeBarrier(store, "shm/created", nranks_, ctx.deadline);
    if (const int64_t elsewhere = store.add("shm/foreign", 0); elsewhere > 0) {
      unlinkNames();
      throw Error(Result::InvalidUsage, foreign ? "shm transport: rank " + std::to_string(rank_) +
                                                      " is on another host than rank 0"
                                                : "shm transport: " + std::to_string(elsewhere) +
                                                      " rank(s) are on another host than rank 0");
    }
    if (rank_ != 0) {
      directory_ = shm::Directory::open(directoryName, nranks_);
      mailbox_ = shm::ShmMailbox::open(mailboxName, nranks_);
    }
    shm::DirectoryEntry& mine = directory_.entry(rank_);
    mine.pid = static_cast<int32_t>(getpid());
    mine.fd = own_.fd();
    mine.bytes = own_.bytes();
    storeBarrier(store, "shm/mapped", nranks_, ctx.deadline);
    unlinkNames();

    myBell_ = &mine.doorbell;
    pids_.resize(nranks_);
    peers_.resize(nranks_);
    std::vector<shm::Doorbell*> bells(nranks_, nullptr);
    for (int r = 0; r < nranks_; ++r) {
      pids_[r] = directory_.entry(r).pid;
      if (r == rank_) continue;
      bells[r] = &directory_.entry(r).doorbell;
      channels_.push_back(std::make_unique<ShmChannel>(*this, r, bells[r]));
    }
    mailbox_->attach(rank_, std::move(bells));
  }

  ~ShmTransport() override { unlinkNames(); }

  const char* name() const override { return "shm"; }

  Channel& channel(int peer) override {
    if (peer < 0 || peer >= nranks_ || peer == rank_)
      throw Error(Result::InvalidArgument, "shm: no channel to rank " + std::to_string(peer));
    return *channels_[peer < rank_ ? peer : peer - 1];
  }

  uint64_t prepareWait() override { return myBell_->prepare(); }

  void wait(uint64_t token, Deadline deadline) override {
    myBell_->sleep(static_cast<uint32_t>(token), deadline);
  }

  PeerMemory* peerMemory() override {
    if (!peerMemory_) peerMemory_ = std::make_unique<shm::ShmPeerMemory>(pids_);
    return peerMemory_.get();
  }
  Mailbox* mailbox() override { return mailbox_.get(); }

  void checkPeers() override {
    for (int r = 0; r < nranks_; ++r) {
      if (r != rank_ && processGone(pids_[r]))
        throw PeerError(r, "rank " + std::to_string(r) + " (pid " + std::to_string(pids_[r]) +
                               ") is gone (it exited or was killed)");
    }
  }

  // The FIFO to `peer`: maps its segment and claims the FIFO (first send only).
  shm::Fifo outbound(int peer) {
    auto& segment = peers_[peer];
    if (!segment) {
      const shm::DirectoryEntry& e = directory_.entry(peer);
      segment = shm::FifoSegment::map(peer, e.pid, e.fd, e.bytes, nranks_);
    }
    return segment->claim(rank_, sizing_);
  }
  std::optional<shm::Fifo> inbound(int peer) const { return own_.inbound(peer); }

 private:
  void unlinkNames() {
    for (const auto& name : names_) shm_unlink(name.c_str());
    names_.clear();
  }

  int rank_, nranks_;
  shm::FifoSizing sizing_;
  std::vector<std::string> names_;  // rank 0's segments until every rank mapped them
  shm::FifoSegment own_;
  shm::Directory directory_;
  std::unique_ptr<shm::ShmMailbox> mailbox_;
  std::vector<std::optional<shm::FifoSegment>> peers_;  // mapped on first send
  std::vector<std::unique_ptr<ShmChannel>> channels_;   // every peer but this rank
  std::vector<pid_t> pids_;
  shm::Doorbell* myBell_ = nullptr;
  std::unique_ptr<shm::ShmPeerMemory> peerMemory_;
};

size_t ShmChannel::trySend(const void* data, size_t bytes) {
  if (!out_) out_ = owner_.outbound(peer_);
  size_t n = out_->write(data, bytes);
  if (n) peerBell_->ring();
  return n;
}

std::span<const std::byte> ShmChannel::peek() {
  if (!in_) in_ = owner_.inbound(peer_);
  return in_ ? in_->readable() : std::span<const std::byte>{};
}

size_t ShmChannel::peekCopy(std::byte* out, size_t bytes) {
  if (!in_) in_ = owner_.inbound(peer_);
  return in_ ? in_->copyReadable(out, bytes) : 0;
}

}  // namespace

std::unique_ptr<Transport> makeShmTransport(const TransportContext& ctx) {
  return std::make_unique<ShmTransport>(ctx);
}

}  // namespace chorus
