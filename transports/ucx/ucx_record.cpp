#include "transports/ucx/ucx_record.hpp"

#include "errors.hpp"

#include <cstring>

namespace chorus::ucx {
namespace {

constexpr uint64_t kMagic = 0x3178637553524843ull;  // "CHRSucx1"

struct Header {
  uint64_t magic;
  uint64_t block;
  int32_t window;
  int32_t nranks;
  int32_t peerErrors;
  int32_t paths;
};
static_assert(sizeof(Header) == 32);

std::string describe(int nranks, uint64_t block, int window, bool peerErrors, int paths) {
  return "nranks=" + std::to_string(nranks) + " CHORUS_UCX_BLOCK=" + std::to_string(block) +
         " CHORUS_UCX_WINDOW=" + std::to_string(window) +
         " CHORUS_UCX_ERR_MODE=" + (peerErrors ? "peer" : "none") +
         " CHORUS_UCX_PATHS=" + std::to_string(paths);
}

}  // namespace

std::vector<std::byte> encodeRecord(const RecordSettings& ours, std::string_view workerAddress) {
  Header h{kMagic, ours.block, ours.window, ours.nranks, ours.peerErrors ? 1 : 0, ours.paths};
  std::vector<std::byte> out(sizeof(h) + workerAddress.size());
  std::memcpy(out.data(), &h, sizeof(h));
  if (!workerAddress.empty())
    std::memcpy(out.data() + sizeof(h), workerAddress.data(), workerAddress.size());
  return out;
}

std::string decodeRecord(std::span<const std::byte> record, int peer, int rank,
                         const RecordSettings& ours) {
  Header h{};
  if (record.size() > sizeof(h)) std::memcpy(&h, record.data(), sizeof(h));
  if (h.magic != kMagic || h.paths < 1 || h.paths > 64 || (h.peerErrors != 0 && h.peerErrors != 1))
    throw Error(Result::InternalError, "ucx: bad worker address from rank " + std::to_string(peer));
  std::string theirs = describe(h.nranks, h.block, h.window, h.peerErrors != 0, h.paths);
  std::string mine = describe(ours.nranks, ours.block, ours.window, ours.peerErrors, ours.paths);
  if (theirs != mine)
    throw Error(Result::InvalidUsage, "ucx: rank " + std::to_string(peer) + " uses " + theirs +
                                          " but rank " + std::to_string(rank) + " uses " + mine);
  return std::string(reinterpret_cast<const char*>(record.data()) + sizeof(h),
                     record.size() - sizeof(h));
}

}  // namespace chorus::ucx
