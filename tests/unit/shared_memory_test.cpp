// memAlloc / memFree and buffer registration (src/memory/shared_memory.hpp): the regions
// found for a buffer, and clear errors for bad input.
#include "memory/shared_memory.hpp"
#include "transports/shm/shm_peer_memory.hpp"

#include <chorus/chorus.h>
#include <chorus/chorus.hpp>

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace chorus {
namespace {

std::string errorOf(auto&& call) {
  try {
    call();
  } catch (const Error& e) {
    return std::string(toString(e.code())) + ": " + e.what();
  }
  return "";
}

TEST(SharedMemory, MemAllocGivesSharedMemoryAPeerCanFind) {
  auto* p = static_cast<std::byte*>(memAlloc(3 << 20));
  ASSERT_NE(p, nullptr);
  std::memset(p, 7, 3 << 20);  // writable, all of it
  auto region = memory::allocatedRegion(p + 100, 1 << 20);
  ASSERT_TRUE(region);
  EXPECT_EQ(region->base, p);
  EXPECT_GE(region->bytes, size_t{3} << 20);
  EXPECT_GE(region->fd, 0);
  EXPECT_FALSE(memory::allocatedRegion(p + (4 << 20), 1));  // beyond it
  const std::string kind = memPageKind();
  EXPECT_TRUE(kind == "hugetlb" || kind == "thp" || kind == "4k") << kind;
  memFree(p);
  EXPECT_FALSE(memory::allocatedRegion(p, 1));
}

// The canary sits after the last byte a caller may name, also for a size that is a whole
// number of huge pages (it takes one more page then), and reads as broken once the
// mapping is no longer the memfd (what the fault suite's shm `close` does).
TEST(SharedMemory, EveryAllocationEndsInACanaryThatABrokenMappingLoses) {
  for (size_t bytes :
       {size_t{1}, size_t{4096}, size_t{2} << 20, (size_t{2} << 20) - 8, (size_t{2} << 20) - 7}) {
    auto* p = static_cast<std::byte*>(memAlloc(bytes));
    auto region = memory::allocatedRegion(p, bytes);
    ASSERT_TRUE(region) << bytes;
    EXPECT_GE(region->bytes, bytes + memory::kCanaryBytes) << bytes;
    EXPECT_TRUE(memory::canaryIntact(region->base, region->bytes, region->serial)) << bytes;
    EXPECT_FALSE(memory::canaryIntact(region->base, region->bytes, region->serial + 1));
    // No buffer a caller can name reaches the canary.
    EXPECT_FALSE(memory::allocatedRegion(p, region->bytes - memory::kCanaryBytes + 1)) << bytes;
    std::memset(p, 0xff, bytes);  // the caller's bytes, all of them: the canary survives
    EXPECT_TRUE(memory::canaryIntact(region->base, region->bytes, region->serial)) << bytes;
    ASSERT_NE(mmap(p, region->bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
              MAP_FAILED);
    EXPECT_FALSE(memory::canaryIntact(region->base, region->bytes, region->serial)) << bytes;
    memFree(p);
  }
}

// A reader's mapping of a peer's memAlloc memory replaced after it was handed out (while
// a step read through it): checkMapped, which the engine calls when such a read step
// completes, reports it naming the peer instead of letting the step succeed. The "peer"
// is this process (rank 1 of two ranks with one pid), mapped through its own memfd.
TEST(SharedMemory, AReplacedPeerMappingFailsTheReadThatUsedIt) {
  const size_t bytes = size_t{1} << 20;
  auto* p = static_cast<std::byte*>(memAlloc(bytes));
  std::memset(p, 0x5a, bytes);
  auto region = memory::allocatedRegion(p, bytes);
  ASSERT_TRUE(region);
  shm::ShmPeerMemory peers({getpid(), getpid()});
  const std::vector<std::byte> blob = peers.describe(*region, p + 64, 4096);
  const std::byte* mapped = peers.map(1, blob);
  ASSERT_NE(mapped, nullptr);
  ASSERT_NE(mapped, p + 64);  // a mapping of its own, not the owner's pointer
  EXPECT_EQ(mapped[0], std::byte{0x5a});
  EXPECT_NO_THROW(peers.checkMapped(1, blob));
  // Replace the reader's whole mapping by private zeroes, as the fault suite's shm `close`
  // does to a segment; the owner's memory is untouched.
  std::byte* mappingBase = const_cast<std::byte*>(mapped - 64);
  ASSERT_NE(
      mmap(mappingBase, region->bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
      MAP_FAILED);
  EXPECT_EQ(mapped[0], std::byte{0});
  EXPECT_EQ(p[64], std::byte{0x5a});
  const std::string error = errorOf([&] { peers.checkMapped(1, blob); });
  EXPECT_NE(error.find("mapping of rank 1's memAlloc memory lost its canary"), std::string::npos)
      << error;
  memFree(p);
}

TEST(SharedMemory, BadInputGetsClearErrors) {
  EXPECT_NE(errorOf([] { memAlloc(0); }).find("invalid argument: memAlloc: size is 0"),
            std::string::npos)
      << errorOf([] { memAlloc(0); });
  int local = 0;
  EXPECT_NE(errorOf([&] { memFree(&local); }).find("was not returned by memAlloc"),
            std::string::npos);
  void* p = memAlloc(4096);
  memFree(p);
  EXPECT_NE(errorOf([&] { memFree(p); }).find("or was freed already"), std::string::npos);
  EXPECT_NO_THROW(memFree(nullptr));

  memory::Registrations regs;
  std::vector<std::byte> buffer(1000);
  EXPECT_NE(errorOf([&] { regs.add(nullptr, 10); }).find("buffer is null"), std::string::npos);
  EXPECT_NE(errorOf([&] { regs.add(buffer.data(), 0); }).find("size is 0"), std::string::npos);
  void* h = regs.add(buffer.data() + 100, 500);
  EXPECT_NE(errorOf([&] { regs.add(buffer.data(), 101); }).find("overlaps the registered"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { regs.add(buffer.data() + 599, 10); }).find("overlaps"),
            std::string::npos);
  void* next = regs.add(buffer.data() + 600, 10);  // touching is not overlapping
  EXPECT_TRUE(regs.find(buffer.data() + 100, 500));
  EXPECT_FALSE(regs.find(buffer.data() + 100, 501));  // runs past the registration
  EXPECT_FALSE(regs.find(buffer.data(), 1));
  EXPECT_EQ(regs.find(buffer.data() + 200, 8)->fd, -1);  // ordinary memory: read by CMA
  regs.remove(h);
  EXPECT_FALSE(regs.find(buffer.data() + 100, 1));
  EXPECT_NE(errorOf([&] { regs.remove(h); }).find("unknown handle"), std::string::npos);
  regs.remove(next);
  EXPECT_TRUE(regs.empty());
}

TEST(SharedMemory, CApi) {
  void* p = nullptr;
  ASSERT_EQ(chorusMemAlloc(&p, 1 << 16), chorusSuccess);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(chorusMemFree(p), chorusSuccess);
  EXPECT_EQ(chorusMemFree(p), chorusInvalidArgument);  // twice
  EXPECT_EQ(chorusMemAlloc(nullptr, 16), chorusInvalidArgument);
  EXPECT_EQ(chorusMemAlloc(&p, 0), chorusInvalidArgument);
  void* handle = nullptr;
  EXPECT_EQ(chorusCommRegister(nullptr, &p, 8, &handle), chorusInvalidArgument);
  EXPECT_EQ(chorusCommDeregister(nullptr, handle), chorusInvalidArgument);
}

}  // namespace
}  // namespace chorus
