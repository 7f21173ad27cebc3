// Shared-memory transport for ranks of one host. Each rank owns one POSIX shared-memory
// segment holding its doorbell and one inbound FIFO per peer; a sender copies into the
// receiver's FIFO and the receiver reduces straight out of it (one copy per hop, the
// reduction fused with the read). Segments are unlinked once every rank has mapped them,
// so nothing is left behind in /dev/shm even if a rank is killed later.
#include "transports/shm/doorbell.hpp"
#include "transports/shm/fifo.hpp"
#include "transports/shm/shm_peer_memory.hpp"
#include "transports/shm/mailbox.hpp"

#include "errors.hpp"
#include "settings/settings.hpp"
#include "store/barrier.hpp"
#include "store/store.hpp"
#include "transports/transport.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>

namespace chorus {
namespace {

constexpr uint32_t kMagic = 0x43485348;  // "CHSH"

struct SegmentHeader {
  uint32_t magic;
  int32_t pid;
  uint32_t nranks;
  uint64_t fifoBytes;
  shm::Doorbell doorbell;
};

size_t headerBytes(int nranks) {
  return (sizeof(SegmentHeader) + 63) / 64 * 64 + sizeof(shm::FifoHeader) * nranks;
}

class Segment {
 public:
  Segment() = default;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  Segment(Segment&& o) noexcept { *this = std::move(o); }
  Segment& operator=(Segment&& o) noexcept {
    std::swap(base_, o.base_);
    std::swap(bytes_, o.bytes_);
    std::swap(nranks_, o.nranks_);
    return *this;
  }
  ~Segment() {
    if (base_) munmap(base_, bytes_);
  }

  static Segment create(const std::string& name, int nranks, size_t fifoBytes) {
    int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) throwSystemError("shm_open(" + name + ")");
    size_t bytes = headerBytes(nranks) + fifoBytes * nranks;
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      close(fd);
      shm_unlink(name.c_str());
      throwSystemError("ftruncate of " + name + " (is /dev/shm large enough?)");
    }
    Segment s = map(fd, bytes, name, nranks);
    auto* h = new (s.base_) SegmentHeader{
        kMagic, static_cast<int32_t>(getpid()), static_cast<uint32_t>(nranks), fifoBytes, {}};
    (void)h;
    for (int i = 0; i < nranks; ++i) new (s.fifoHeader(i)) shm::FifoHeader();
    return s;
  }

  static Segment open(const std::string& name, int nranks) {
    int fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0) throwSystemError("shm_open(" + name + ")");
    struct stat st {};
    fstat(fd, &st);
    Segment s = map(fd, static_cast<size_t>(st.st_size), name, nranks);
    if (s.header()->magic != kMagic || s.header()->nranks != static_cast<uint32_t>(nranks))
      throw Error(Result::InternalError, "shm segment " + name + " is not ours");
    return s;
  }

  SegmentHeader* header() const { return static_cast<SegmentHeader*>(base_); }
  shm::FifoHeader* fifoHeader(int i) const {
    auto* first = static_cast<std::byte*>(base_) + (sizeof(SegmentHeader) + 63) / 64 * 64;
    return reinterpret_cast<shm::FifoHeader*>(first) + i;
  }
  shm::Fifo fifo(int from) const {
    size_t cap = header()->fifoBytes;
    auto* data = static_cast<std::byte*>(base_) + headerBytes(nranks_) + cap * from;
    return shm::Fifo(fifoHeader(from), data, cap);
  }

 private:
  static Segment map(int fd, size_t bytes, const std::string& name, int nranks) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) throwSystemError("mmap of " + name);
    Segment s;
    s.base_ = p;
    s.bytes_ = bytes;
    s.nranks_ = nranks;
    return s;
  }
  void* base_ = nullptr;
  size_t bytes_ = 0;
  int nranks_ = 0;
};

bool processGone(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  // A dead child not yet reaped by its parent is a zombie: gone for our purposes.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() &&
         (line[close + 2] == 'Z' || line[close + 2] == 'X');
}

// Each inbound FIFO's bytes: CHORUS_SHM_FIFO_BYTES when set; else 1 MiB up to 32 ranks
// and 32 MiB / nranks beyond (at least 64 KiB), so that a rank's FIFOs take at most
// 32 MiB however many peers write to it (n^2 FIFOs of 1 MiB: 16 GiB at 128 ranks).
size_t fifoBytesFor(int nranks) {
  constexpr size_t kBudget = size_t{32} << 20, kFloor = size_t{64} << 10;
  const size_t set = std::bit_ceil(
      static_cast<size_t>(std::max<int64_t>(4096, settings::integer("CHORUS_SHM_FIFO_BYTES"))));
  if (settings::isSet("CHORUS_SHM_FIFO_BYTES")) return set;
  return std::min(set, std::max(kFloor, std::bit_floor(kBudget / static_cast<size_t>(nranks))));
}

class ShmChannel : public Channel {
 public:
  ShmChannel(shm::Fifo out, shm::Fifo in, shm::Doorbell* peerBell)
      : out_(out), in_(in), peerBell_(peerBell) {}
  size_t trySend(const void* data, size_t bytes) override {
    size_t n = out_.write(data, bytes);
    if (n) peerBell_->ring();
    return n;
  }
  std::span<const std::byte> peek() override { return in_.readable(); }
  void consume(size_t bytes) override {
    in_.release(bytes);
    peerBell_->ring();  // the sender may be waiting for room
  }

 private:
  shm::Fifo out_, in_;
  shm::Doorbell* peerBell_;
};

class ShmTransport : public Transport {
 public:
  explicit ShmTransport(const TransportContext& ctx) : rank_(ctx.rank), nranks_(ctx.nranks) {
    Store& store = *ctx.store;
    // Every rank must share this host: each compares itself with rank 0 (O(1) store keys
    // per rank, not one per peer); all learn the count at the "shm/created" barrier.
    const auto host0 = store.get("host/0", ctx.deadline);
    const bool foreign =
        std::string(reinterpret_cast<const char*>(host0.data()), host0.size()) != ctx.hostId;
    store.add("shm/foreign", foreign ? 1 : 0);
    const size_t fifoBytes = fifoBytesFor(nranks_);
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
    auto nameOf = [&](int r) { return "/chorus-" + token + "-" + std::to_string(r); };
    ownName_ = nameOf(rank_);
    segments_.resize(nranks_);
    segments_[rank_] = Segment::create(ownName_, nranks_, fifoBytes);
    const std::string mailboxName = "/chorusmbox-" + token;
    if (rank_ == 0) {
      mailboxName_ = mailboxName;
      mailbox_ = shm::ShmMailbox::create(mailboxName, nranks_);
    }
    storeBarrier(store, "shm/created", nranks_, ctx.deadline);
    if (const int64_t elsewhere = store.add("shm/foreign", 0); elsewhere > 0) {
      shm_unlink(ownName_.c_str());
      if (!mailboxName_.empty()) shm_unlink(mailboxName_.c_str());
      throw Error(Result::InvalidUsage,
                  foreign ? "shm transport: rank " + std::to_string(rank_) +
                                " is on another host than rank 0"
                          : "shm transport: " + std::to_string(elsewhere) +
                                " rank(s) are on another host than rank 0");
    }
    for (int r = 0; r < nranks_; ++r)
      if (r != rank_) segments_[r] = Segment::open(nameOf(r), nranks_);
    if (rank_ != 0) mailbox_ = shm::ShmMailbox::open(mailboxName, nranks_);
    storeBarrier(store, "shm/mapped", nranks_, ctx.deadline);
    shm_unlink(ownName_.c_str());
    ownName_.clear();
    if (!mailboxName_.empty()) shm_unlink(mailboxName_.c_str());
    mailboxName_.clear();

    myBell_ = &segments_[rank_].header()->doorbell;
    channels_.resize(nranks_);
    pids_.resize(nranks_);
    std::vector<shm::Doorbell*> bells(nranks_, nullptr);
    for (int r = 0; r < nranks_; ++r)
      if (r != rank_) bells[r] = &segments_[r].header()->doorbell;
    mailbox_->attach(rank_, std::move(bells));
    for (int r = 0; r < nranks_; ++r) {
      pids_[r] = segments_[r].header()->pid;
      if (r == rank_) continue;
      channels_[r] = std::make_unique<ShmChannel>(
          segments_[r].fifo(rank_), segments_[rank_].fifo(r), &segments_[r].header()->doorbell);
    }
  }

  ~ShmTransport() override {
    if (!ownName_.empty()) shm_unlink(ownName_.c_str());
    if (!mailboxName_.empty()) shm_unlink(mailboxName_.c_str());
  }

  const char* name() const override { return "shm"; }

  Channel& channel(int peer) override {
    if (peer < 0 || peer >= nranks_ || peer == rank_)
      throw Error(Result::InvalidArgument, "shm: no channel to rank " + std::to_string(peer));
    return *channels_[peer];
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

 private:
  int rank_, nranks_;
  std::string ownName_;
  std::string mailboxName_;  // rank 0 until every rank mapped it
  std::unique_ptr<shm::ShmMailbox> mailbox_;
  std::vector<Segment> segments_;
  std::vector<std::unique_ptr<ShmChannel>> channels_;
  std::vector<pid_t> pids_;
  shm::Doorbell* myBell_ = nullptr;
  std::unique_ptr<shm::ShmPeerMemory> peerMemory_;
};

}  // namespace

std::unique_ptr<Transport> makeShmTransport(const TransportContext& ctx) {
  return std::make_unique<ShmTransport>(ctx);
}

}  // namespace chorus
