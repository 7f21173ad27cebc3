// memAlloc / memFree and the per-communicator registrations (shared_memory.hpp).
#include "memory/shared_memory.hpp"

#include "errors.hpp"
#include "log.hpp"

#include <chorus/chorus.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

namespace chorus {
namespace memory {
namespace {

constexpr size_t kHugePage = 2 << 20;

struct Allocation {
  size_t bytes;  // as mapped: the caller's bytes and the canary, rounded up to 2 MiB
  int fd;
  uint64_t serial;
  bool huge;  // hugetlb or shmem THP pages
};

struct Allocations {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> byStart;
  uint64_t nextSerial = 1;
};

Allocations& allocations() {
  static Allocations* all = new Allocations;  // outlives every static destructor
  return *all;
}

long readNumber(const char* path) {
  std::ifstream in(path);
  long v = 0;
  return in >> v ? v : 0;
}

// "[never]" etc. around the active choice of a sysfs selector.
std::string activeChoice(const char* path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  auto open = text.find('['), close = text.find(']');
  return open == std::string::npos || close == std::string::npos
             ? ""
             : text.substr(open + 1, close - open - 1);
}

bool hugetlbPagesFree(size_t bytes) {
  return readNumber("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages") >=
         static_cast<long>((bytes + kHugePage - 1) / kHugePage);
}

bool shmemThp() {
  const std::string mode = activeChoice("/sys/kernel/mm/transparent_hugepage/shmem_enabled");
  return mode == "always" || mode == "within_size" || mode == "advise" || mode == "force";
}

// The entry whose range holds [start, start + bytes), leaving `reserved` bytes at its end
// out (an allocation's canary).
template <typename Map>
auto containing(const Map& map, uintptr_t start, size_t bytes, size_t reserved = 0) {
  auto it = map.upper_bound(start);
  if (it == map.begin()) return map.end();
  --it;
  const uintptr_t end = it->first + it->second.bytes - reserved;
  return start >= it->first && start + bytes <= end && start + bytes >= start ? it : map.end();
}

// Whether every mapping covering [start, start + bytes) may get transparent huge pages.
bool thpEligible(uintptr_t start, size_t bytes) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false, covered = false, eligible = true;
  uintptr_t covers = start;
  while (std::getline(smaps, line)) {
    unsigned long lo, hi;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = lo < start + bytes && start < hi;
      if (inside && lo <= covers) covers = std::max<uintptr_t>(covers, hi);
      continue;
    }
    if (inside && line.rfind("THPeligible:", 0) == 0) eligible &= line.back() == '1';
  }
  covered = covers >= start + bytes;
  return covered && eligible;
}

}  // namespace

std::string pageKind() {
  if (readNumber("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages") > 0) return "hugetlb";
  return shmemThp() ? "thp" : "4k";
}

std::optional<LocalRegion> allocatedRegion(const void* data, size_t bytes) {
  Allocations& all = allocations();
  std::lock_guard lock(all.mutex);
  auto it = containing(all.byStart, reinterpret_cast<uintptr_t>(data), bytes, kCanaryBytes);
  if (it == all.byStart.end()) return std::nullopt;
  return LocalRegion{reinterpret_cast<const std::byte*>(it->first), it->second.bytes, it->second.fd,
                     it->second.serial, it->second.huge};
}

uint64_t canaryFor(uint64_t serial) {
  return (0x43686f7275734d4dULL ^ (serial * 0x9e3779b97f4a7c15ULL)) | 1;  // "ChorusMM"
}

bool canaryIntact(const std::byte* base, size_t mapped, uint64_t serial) {
  if (mapped < kCanaryBytes) return false;
  uint64_t word;
  std::memcpy(&word, base + mapped - kCanaryBytes, sizeof word);
  return word == canaryFor(serial);
}

void* Registrations::add(const void* data, size_t bytes) {
  if (!data) throwInvalid("registerBuffer: buffer is null");
  if (bytes == 0) throwInvalid("registerBuffer: size is 0");
  const uintptr_t start = reinterpret_cast<uintptr_t>(data);
  if (start + bytes < start) throwInvalid("registerBuffer: range wraps around the address space");
  auto next = byStart_.lower_bound(start);
  auto overlaps = [&](auto it) {
    return it != byStart_.end() && it->first < start + bytes &&
           start < it->first + it->second.bytes;
  };
  if (overlaps(next) || (next != byStart_.begin() && overlaps(std::prev(next)))) {
    auto hit = overlaps(next) ? next : std::prev(next);
    std::ostringstream text;
    text << "registerBuffer: [" << data << ", +" << bytes << ") overlaps the registered ["
         << reinterpret_cast<const void*>(hit->first) << ", +" << hit->second.bytes
         << "); deregister it first";
    throwInvalid(text.str());
  }
  const uint64_t handle = nextHandle_++;
  byStart_.emplace(start, Entry{bytes, handle, thpEligible(start, bytes)});
  return reinterpret_cast<void*>(static_cast<uintptr_t>(handle));
}

std::pair<const void*, size_t> Registrations::remove(void* handle) {
  const uint64_t id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  for (auto it = byStart_.begin(); it != byStart_.end(); ++it) {
    if (it->second.handle == id) {
      std::pair<const void*, size_t> range{reinterpret_cast<const void*>(it->first),
                                           it->second.bytes};
      byStart_.erase(it);
      return range;
    }
  }
  std::ostringstream text;
  text << "deregister: unknown handle " << handle
       << " (not returned by registerBuffer on this communicator, or already deregistered)";
  throwInvalid(text.str());
}

std::optional<LocalRegion> Registrations::find(const void* data, size_t bytes) const {
  if (auto allocated = allocatedRegion(data, bytes)) return allocated;
  auto it = containing(byStart_, reinterpret_cast<uintptr_t>(data), bytes);
  if (it == byStart_.end()) return std::nullopt;
  return LocalRegion{reinterpret_cast<const std::byte*>(it->first), it->second.bytes, -1, 0,
                     it->second.hugePages};
}

}  // namespace memory

void* memAlloc(size_t bytes) {
  if (bytes == 0) throwInvalid("memAlloc: size is 0");
  using namespace memory;
  if (bytes > SIZE_MAX - kHugePage - kCanaryBytes) throwInvalid("memAlloc: size is too large");
  const size_t withCanary = bytes + kCanaryBytes;
  const size_t mapped = (withCanary + kHugePage - 1) / kHugePage * kHugePage;
  // On hugetlb pages while enough are free; those may be gone by the time they are mapped
  // (other processes allocate them too: the mapping's reservation fails), and then, as
  // when memfd_create cannot make a hugetlb file, on ordinary pages.
  bool hugetlb = hugetlbPagesFree(withCanary);
  int fd = -1;
  void* p = MAP_FAILED;
  for (;;) {
    fd = memfd_create("chorus-mem", MFD_CLOEXEC | (hugetlb ? MFD_HUGETLB : 0));
    if (fd < 0 && hugetlb) {
      hugetlb = false;
      continue;
    }
    if (fd < 0) throwSystemError("memAlloc: memfd_create");
    if (ftruncate(fd, static_cast<off_t>(mapped)) == 0)
      p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) break;
    const int error = errno;
    close(fd);
    if (hugetlb) {
      hugetlb = false;
      continue;
    }
    errno = error;
    throwSystemError("memAlloc: mapping " + std::to_string(mapped) + " bytes");
  }
  const char* kind = hugetlb ? "hugetlb" : shmemThp() ? "thp" : "4k";
  if (!hugetlb) madvise(p, mapped, MADV_HUGEPAGE);  // takes effect when shmem THP is on
  Allocations& all = allocations();
  {
    std::lock_guard lock(all.mutex);
    const uint64_t serial = all.nextSerial++;
    const uint64_t canary = canaryFor(serial);
    std::memcpy(static_cast<std::byte*>(p) + mapped - kCanaryBytes, &canary, sizeof canary);
    all.byStart.emplace(reinterpret_cast<uintptr_t>(p),
                        Allocation{mapped, fd, serial, std::string_view(kind) != "4k"});
  }
  static bool told = false;
  if (!told) {
    told = true;
    logf(LogLevel::Info, "memAlloc: memfd shared memory on %s pages%s", kind,
         hugetlb ? "" : (shmemThp() ? " (madvise)" : " (no free hugetlb pages; shmem THP off)"));
  }
  return p;
}

void memFree(void* ptr) {
  if (!ptr) return;  // as free(nullptr)
  using namespace memory;
  Allocations& all = allocations();
  Allocation a;
  {
    std::lock_guard lock(all.mutex);
    auto it = all.byStart.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == all.byStart.end()) {
      std::ostringstream text;
      text << "memFree: " << ptr << " was not returned by memAlloc (or was freed already)";
      throwInvalid(text.str());
    }
    a = it->second;
    all.byStart.erase(it);
  }
  munmap(ptr, a.bytes);
  close(a.fd);
}

}  // namespace chorus
