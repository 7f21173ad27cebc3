// ExposedRegions (transports/exposed_regions.hpp), the registered-region bookkeeping ib
// and ucx share: same buffer or not, containment at the region's edges, erasing what
// overlaps (with the release callback), and the range check's wrap-around.
#include "transports/exposed_regions.hpp"

#include "errors.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace chorus {
namespace {

LocalRegion at(std::byte* base, size_t bytes, uint64_t serial = 0) {
  LocalRegion r;
  r.base = base;
  r.bytes = bytes;
  r.serial = serial;
  return r;
}

TEST(ExposedRegions, SameBufferOnlyWithSameStartBytesAndSerial) {
  std::vector<std::byte> memory(4096);
  ExposedRegions<int> regions;
  regions.insert(at(memory.data(), 1024, 7), 1);
  ASSERT_NE(regions.find(at(memory.data(), 1024, 7)), nullptr);
  EXPECT_EQ(*regions.find(at(memory.data(), 1024, 7)), 1);
  EXPECT_EQ(regions.find(at(memory.data(), 1024, 8)), nullptr);  // a new allocation there
  EXPECT_EQ(regions.find(at(memory.data(), 2048, 7)), nullptr);
  EXPECT_EQ(regions.find(at(memory.data() + 1, 1024, 7)), nullptr);
}

TEST(ExposedRegions, ContainingLooksAtTheRegionBelowAndItsEnd) {
  std::vector<std::byte> memory(4096);
  ExposedRegions<int> regions;
  regions.insert(at(memory.data() + 1024, 1024), 1);
  regions.insert(at(memory.data() + 3072, 512), 2);
  EXPECT_EQ(regions.containing(memory.data(), 16), nullptr);        // below every region
  EXPECT_EQ(regions.containing(memory.data() + 1020, 8), nullptr);  // straddles the start
  ASSERT_NE(regions.containing(memory.data() + 1024, 1024), nullptr);
  EXPECT_EQ(*regions.containing(memory.data() + 1024, 1024), 1);    // exactly the region
  EXPECT_EQ(*regions.containing(memory.data() + 2047, 1), 1);       // its last byte
  EXPECT_EQ(regions.containing(memory.data() + 2047, 2), nullptr);  // one past its end
  EXPECT_EQ(regions.containing(memory.data() + 2048, 1), nullptr);  // in the gap
  EXPECT_EQ(*regions.containing(memory.data() + 3100, 100), 2);
  EXPECT_EQ(regions.containing(memory.data() + 3500, 100), nullptr);
}

TEST(ExposedRegions, EraseOverlappingReleasesExactlyTheOverlappingOnes) {
  std::vector<std::byte> memory(8192);
  ExposedRegions<int> regions;
  regions.insert(at(memory.data(), 1024), 1);
  regions.insert(at(memory.data() + 1024, 1024), 2);  // touches 1's end
  regions.insert(at(memory.data() + 4096, 1024), 3);
  std::vector<int> released;
  // [1500, 4097) overlaps 2 and 3's first byte, not 1 (which ends at 1024).
  regions.eraseOverlapping(memory.data() + 1500, 4097 - 1500,
                           [&](int& handle) { released.push_back(handle); });
  EXPECT_EQ(released, (std::vector<int>{2, 3}));
  EXPECT_EQ(regions.size(), 1u);
  EXPECT_NE(regions.containing(memory.data(), 1024), nullptr);
  // An empty range overlaps nothing.
  regions.eraseOverlapping(memory.data(), 0);
  EXPECT_EQ(regions.size(), 1u);
  regions.eraseOverlapping(memory.data() + 1023, 1);
  EXPECT_EQ(regions.size(), 0u);
}

TEST(ExposedRegions, RangeCheckNamesTheTransportAndCannotWrap) {
  EXPECT_NO_THROW(checkExposedRange("ucx", 3, "reading", 1024, 0, 1024));
  EXPECT_NO_THROW(checkExposedRange("ucx", 3, "reading", 1024, 1024, 0));
  try {
    checkExposedRange("ib", 3, "writing", 1024, 1000, 25);
    FAIL() << "a range past the end was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "ib: writing bytes [1000, 1025) of the 1024 bytes rank 3 exposed");
  }
  // offset + bytes wraps to 0 in 64 bits: still refused.
  const size_t huge = std::numeric_limits<size_t>::max();
  EXPECT_THROW(checkExposedRange("shm", 1, "reading", 1024, huge, 1), Error);
  EXPECT_THROW(checkExposedRange("shm", 1, "reading", 1024, 8, huge - 7), Error);
}

}  // namespace
}  // namespace chorus
