#include "transports/shm/mailbox.hpp"

#include "errors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace chorus::shm {
namespace {

constexpr uint32_t kMailboxMagic = 0x43484d42;  // "CHMB"
constexpr size_t kMailboxHeaderBytes = 64;
constexpr size_t roundUpLine(size_t bytes) { return (bytes + 63) / 64 * 64; }
// A slot: the LL words (4 data bytes each), the plain message's flag (sequence and length)
// on a line of its own, the plain message. Two slots per rank, each on its own lines.
constexpr size_t kLineWords = ShmMailbox::kLineBytes / 4;
constexpr size_t kFlagOffset = roundUpLine(kLineWords * 8);
constexpr size_t kDataOffset = kFlagOffset + 64;
constexpr size_t kSlotBytes = kDataOffset + roundUpLine(ShmMailbox::kCapacity);
static_assert(ShmMailbox::kLineBytes % 4 == 0 && ShmMailbox::kLineBytes <= ShmMailbox::kCapacity);

uint64_t word(uint32_t seq, uint32_t low) { return uint64_t{seq} << 32 | low; }
uint32_t seqOf(uint64_t w) { return static_cast<uint32_t>(w >> 32); }

struct Header {
  uint32_t magic;
  uint32_t nranks;
};

size_t segmentBytesFor(int nranks) { return kMailboxHeaderBytes + kSlotBytes * 2 * nranks; }

void* mapShared(int fd, size_t bytes, const std::string& name) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) throwSystemError("mmap of " + name);
  return p;
}

}  // namespace

std::unique_ptr<ShmMailbox> ShmMailbox::create(const std::string& name, int nranks) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) throwSystemError("shm_open(" + name + ")");
  const size_t bytes = segmentBytesFor(nranks);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    shm_unlink(name.c_str());
    throwSystemError("ftruncate of " + name + " (is /dev/shm large enough?)");
  }
  void* base = mapShared(fd, bytes, name);
  // ftruncate zeroed the slots: sequence 0 is never posted, so no slot looks written.
  new (base) Header{kMailboxMagic, static_cast<uint32_t>(nranks)};
  return std::unique_ptr<ShmMailbox>(new ShmMailbox(base, bytes, nranks));
}

std::unique_ptr<ShmMailbox> ShmMailbox::open(const std::string& name, int nranks) {
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) throwSystemError("shm_open(" + name + ")");
  struct stat st {};
  fstat(fd, &st);
  const size_t bytes = static_cast<size_t>(st.st_size);
  if (bytes != segmentBytesFor(nranks)) {
    close(fd);
    throw Error(Result::InternalError, "shm mailbox " + name + " is not ours");
  }
  void* base = mapShared(fd, bytes, name);
  auto box = std::unique_ptr<ShmMailbox>(new ShmMailbox(base, bytes, nranks));
  auto* h = static_cast<Header*>(base);
  if (h->magic != kMailboxMagic || h->nranks != static_cast<uint32_t>(nranks))
    throw Error(Result::InternalError, "shm mailbox " + name + " is not ours");
  return box;
}

ShmMailbox::~ShmMailbox() { munmap(base_, bytes_); }

void ShmMailbox::attach(int rank, std::vector<Doorbell*> bells) {
  rank_ = rank;
  bells_ = std::move(bells);
}

std::byte* ShmMailbox::slot(int rank, uint32_t seq) const {
  return static_cast<std::byte*>(base_) + kMailboxHeaderBytes + kSlotBytes * (2 * rank + seq % 2);
}

void ShmMailbox::post(uint32_t seq, const void* data, size_t bytes) {
  if (bytes > kCapacity)
    throw Error(Result::InvalidArgument,
                "shm mailbox: " + std::to_string(bytes) + " bytes > " + std::to_string(kCapacity));
  std::byte* at = slot(rank_, seq);
  if (bytes <= kLineBytes) {
    uint32_t words[kLineWords];
    const size_t n = (bytes + 3) / 4;
    if (n > 0) words[n - 1] = 0;  // the last word's padding
    std::memcpy(words, data, bytes);
    auto* out = reinterpret_cast<std::atomic<uint64_t>*>(at);
    for (size_t i = 0; i < n; ++i) out[i].store(word(seq, words[i]), std::memory_order_relaxed);
  } else {
    std::memcpy(at + kDataOffset, data, bytes);
    reinterpret_cast<std::atomic<uint64_t>*>(at + kFlagOffset)
        ->store(word(seq, static_cast<uint32_t>(bytes)), std::memory_order_release);
  }
  // Dekker with Doorbell::prepare (a seq_cst store, then the sleeper polls once more):
  // either the sleeper sees the message or we see it asleep and ring.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (Doorbell* bell : bells_)
    if (bell && bell->sleeping.load(std::memory_order_relaxed)) bell->ring();
}

bool ShmMailbox::tryTake(int peer, uint32_t seq, void* out, size_t bytes) {
  if (bytes > kCapacity || peer < 0 || peer >= nranks_)
    throw Error(Result::InvalidArgument, "shm mailbox: bad take from rank " + std::to_string(peer));
  const std::byte* at = slot(peer, seq);
  const auto* in = reinterpret_cast<const std::atomic<uint64_t>*>(at);
  if (bytes <= kLineBytes) {
    uint32_t words[kLineWords];
    const size_t n = (bytes + 3) / 4;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t w = in[i].load(std::memory_order_acquire);
      if (seqOf(w) == seq) {
        words[i] = static_cast<uint32_t>(w);
        continue;
      }
      // Word 0 missing: nothing posted yet, or a plain message (a call of another size).
      // Another word missing: the rest is on its way, or the peer posted fewer words than
      // we expect; then it finds the difference in our message, which is longer.
      return i == 0 && takePlain(at, seq, out, bytes);
    }
    std::memcpy(out, words, bytes);
    return true;
  }
  // An LL message here (word 0 of this sequence) is a call of another size: the peer
  // expects LL words and finds the difference in our plain message.
  return takePlain(at, seq, out, bytes);
}

bool ShmMailbox::takePlain(const std::byte* at, uint32_t seq, void* out, size_t bytes) {
  const uint64_t flag = reinterpret_cast<const std::atomic<uint64_t>*>(at + kFlagOffset)
                            ->load(std::memory_order_acquire);
  if (seqOf(flag) != seq) return false;
  // Taken as posted, cut or followed by zeros: a length other than ours is a call of
  // another size, which its fingerprint shows.
  const size_t posted = static_cast<uint32_t>(flag);
  std::memcpy(out, at + kDataOffset, std::min(posted, bytes));
  if (posted < bytes) std::memset(static_cast<std::byte*>(out) + posted, 0, bytes - posted);
  return true;
}

}  // namespace chorus::shm
