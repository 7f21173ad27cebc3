// The ucx transport's connection record (transports/ucx/ucx_record.hpp): a record decodes
// to the addresses it was made from, and ranks whose settings differ (the rendezvous
// threshold among them: both ends must announce the same messages) fail with an error
// naming both. Built with UCX only.
#ifdef CHORUS_HAVE_UCX
#include "transports/ucx/ucx_record.hpp"

#include "errors.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace chorus;
using namespace chorus::ucx;

namespace {

RecordSettings settingsWith(uint64_t rendezvous) {
  RecordSettings s;
  s.block = 256 << 10;
  s.window = 8;
  s.nranks = 4;
  s.peerErrors = true;
  s.paths = 1;
  s.rendezvous = rendezvous;
  return s;
}

TEST(UcxRecord, RoundTripsWithTheRendezvousSetting) {
  const std::vector<std::string> workers{"worker-a", "worker-b"};
  const auto record = encodeRecord(settingsWith(65536), workers);
  EXPECT_EQ(decodeRecord(record, 1, 0, settingsWith(65536)), workers);
}

TEST(UcxRecord, DifferentRendezvousThresholdsFailNamingBoth) {
  const std::vector<std::string> workers{"worker-a"};
  const auto record = encodeRecord(settingsWith(1024), workers);
  try {
    decodeRecord(record, 1, 0, settingsWith(0));
    FAIL() << "ranks with different CHORUS_UCX_RNDV_BYTES were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Result::InvalidUsage);
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1 uses"), std::string::npos) << what;
    EXPECT_NE(what.find("CHORUS_UCX_RNDV_BYTES=1024"), std::string::npos) << what;
    EXPECT_NE(what.find("CHORUS_UCX_RNDV_BYTES=0"), std::string::npos) << what;
  }
}

}  // namespace
#endif  // CHORUS_HAVE_UCX
