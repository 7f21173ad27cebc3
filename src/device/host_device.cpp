// The host implementation of the device interface: memAlloc buffers (memfd shared memory,
// so exportable), memcpy and the CPU kernels, done at once.
#include "device/device.hpp"

#include "errors.hpp"
#include "kernels/reduce.hpp"
#include "memory/shared_memory.hpp"
#include "transports/shm/peer_fd.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace chorus::device {

bool Device::wait(Event e, Deadline deadline) {
  // Spin briefly (most work is short), then sleep in growing steps up to 1 ms.
  auto pause = std::chrono::microseconds(1);
  for (int polls = 0;; ++polls) {
    if (done(e)) return true;
    if (Clock::now() >= deadline) return false;
    if (polls < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(1));
    }
  }
}

std::string IpcHandle::toHex() const {
  static const char* digits = "0123456789abcdef";
  std::string s;
  auto put = [&](const uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) s += digits[p[i] >> 4], s += digits[p[i] & 15];
  };
  put(data.data(), data.size());
  put(reinterpret_cast<const uint8_t*>(&offset), sizeof offset);
  put(reinterpret_cast<const uint8_t*>(&bytes), sizeof bytes);
  return s;
}

IpcHandle IpcHandle::fromHex(const std::string& hex) {
  IpcHandle h;
  const size_t need = 2 * (h.data.size() + sizeof h.offset + sizeof h.bytes);
  if (hex.size() != need)
    throwInvalid("IpcHandle: " + std::to_string(need) + " hex digits expected");
  auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throwInvalid("IpcHandle: not a hex digit");
  };
  std::vector<uint8_t> raw(need / 2);
  for (size_t i = 0; i < raw.size(); ++i)
    raw[i] = uint8_t(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  std::memcpy(h.data.data(), raw.data(), h.data.size());
  std::memcpy(&h.offset, raw.data() + h.data.size(), sizeof h.offset);
  std::memcpy(&h.bytes, raw.data() + h.data.size() + sizeof h.offset, sizeof h.bytes);
  return h;
}

namespace {

// What a host handle's data holds: the exporting process and its memfd.
struct HostExport {
  int32_t pid;
  int32_t fd;
  uint64_t mapped;  // bytes of the memfd mapped from its start
};

class HostDevice final : public Device {
 public:
  std::string name() const override { return "host"; }
  void* allocate(size_t bytes) override { return memAlloc(bytes); }
  void release(void* p) override { memFree(p); }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes && dst != src) std::memmove(dst, src, bytes);
  }
  void reduce(DataType type, RedOp op, void* dst, const void* a, const void* b,
              size_t count) override {
    kernels::reduce(type, op, dst, a, b, count);
  }
  Event record() override { return ++events_; }
  bool done(Event e) override { return e <= events_; }
  IpcHandle exportMemory(void* p, size_t bytes) override {
    auto region = memory::allocatedRegion(p, bytes);
    if (!region) throwInvalid("exportMemory: not a buffer of this device (memAlloc)");
    IpcHandle h;
    const HostExport e{int32_t(getpid()), int32_t(region->fd), region->bytes};
    std::memcpy(h.data.data(), &e, sizeof e);
    h.offset = uint64_t(static_cast<std::byte*>(p) - region->base);
    h.bytes = bytes;
    return h;
  }
  void* importMemory(const IpcHandle& h) override {
    HostExport e;
    std::memcpy(&e, h.data.data(), sizeof e);
    if (h.offset + h.bytes > e.mapped) throwInvalid("importMemory: range beyond the allocation");
    const int fd = shm::openPeerFd(-1, e.pid, e.fd, O_RDWR, "an exported device buffer");
    void* base = mmap(nullptr, e.mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) throwSystemError("importMemory: mmap");
    std::lock_guard lock(mutex_);
    void* p = static_cast<std::byte*>(base) + h.offset;
    imported_[p] = {base, e.mapped};
    return p;
  }
  void closeImported(void* p) override {
    std::lock_guard lock(mutex_);
    auto it = imported_.find(p);
    if (it == imported_.end()) throwInvalid("closeImported: not an imported pointer");
    munmap(it->second.first, it->second.second);
    imported_.erase(it);
  }

 private:
  Event events_ = 0;
  std::mutex mutex_;
  std::map<void*, std::pair<void*, size_t>> imported_;
};

}  // namespace

std::unique_ptr<Device> makeHostDevice() { return std::make_unique<HostDevice>(); }

}  // namespace chorus::device
