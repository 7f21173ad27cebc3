#include "transports/ucx/ucx_record.hpp"

#include "errors.hpp"

#include <cstring>

namespace chorus::ucx {
namespace {

constexpr uint64_t kMagic = 0x3478637553524843ull;  // "CHRSucx4"

struct Header {
  uint64_t magic;
  uint64_t block;
  uint64_t rendezvous;
  int32_t window;
  int32_t nranks;
  int32_t peerErrors;
  int32_t paths;
  int32_t devices;
  int32_t hosts;
};
static_assert(sizeof(Header) == 48);

std::string describe(int nranks, uint64_t block, int window, bool peerErrors, int paths,
                     uint64_t rendezvous) {
  return "nranks=" + std::to_string(nranks) + " CHORUS_UCX_BLOCK=" + std::to_string(block) +
         " CHORUS_UCX_WINDOW=" + std::to_string(window) +
         " CHORUS_UCX_ERR_MODE=" + (peerErrors ? "peer" : "none") +
         " CHORUS_UCX_PATHS=" + std::to_string(paths) +
         " CHORUS_UCX_RNDV_BYTES=" + std::to_string(rendezvous);
}

}  // namespace

std::vector<std::byte> encodeRecord(const RecordSettings& ours,
                                    std::span<const std::string> workerAddresses,
                                    std::span<const std::string> hostAddresses) {
  Header h{kMagic,
           ours.block,
           ours.rendezvous,
           ours.window,
           ours.nranks,
           ours.peerErrors ? 1 : 0,
           ours.paths,
           static_cast<int32_t>(workerAddresses.size()),
           static_cast<int32_t>(hostAddresses.size())};
  std::vector<std::byte> out(sizeof(h));
  std::memcpy(out.data(), &h, sizeof(h));
  auto append = [&](const std::string& address) {
    const auto length = static_cast<uint32_t>(address.size());
    const size_t at = out.size();
    out.resize(at + sizeof(length) + address.size());
    std::memcpy(out.data() + at, &length, sizeof(length));
    if (!address.empty()) std::memcpy(out.data() + at + sizeof(length), address.data(), length);
  };
  for (const std::string& address : workerAddresses) append(address);
  for (const std::string& address : hostAddresses) append(address);
  return out;
}

std::vector<std::string> decodeRecord(std::span<const std::byte> record, int peer, int rank,
                                      const RecordSettings& ours,
                                      std::vector<std::string>* hostAddresses) {
  auto bad = [&](const char* why) {
    return Error(Result::InternalError, std::string("ucx: bad worker address record from rank ") +
                                            std::to_string(peer) + " (" + why + ")");
  };
  Header h{};
  if (record.size() > sizeof(h)) std::memcpy(&h, record.data(), sizeof(h));
  if (h.magic != kMagic || h.paths < 1 || h.paths > 64 ||
      (h.peerErrors != 0 && h.peerErrors != 1) || h.devices < 1 || h.devices > kMostDevices ||
      h.hosts < 0 || h.hosts > kMostHostAddresses)
    throw bad("header");
  std::string theirs =
      describe(h.nranks, h.block, h.window, h.peerErrors != 0, h.paths, h.rendezvous);
  std::string mine =
      describe(ours.nranks, ours.block, ours.window, ours.peerErrors, ours.paths, ours.rendezvous);
  if (theirs != mine)
    throw Error(Result::InvalidUsage, "ucx: rank " + std::to_string(peer) + " uses " + theirs +
                                          " but rank " + std::to_string(rank) + " uses " + mine);
  size_t at = sizeof(h);
  auto next = [&](size_t most) {
    uint32_t length = 0;
    if (record.size() - at < sizeof(length)) throw bad("truncated");
    std::memcpy(&length, record.data() + at, sizeof(length));
    at += sizeof(length);
    if (length == 0 || length > most || record.size() - at < length) throw bad("address length");
    std::string address(reinterpret_cast<const char*>(record.data()) + at, length);
    at += length;
    return address;
  };
  std::vector<std::string> addresses, hosts;
  for (int d = 0; d < h.devices; ++d) addresses.push_back(next(record.size()));
  for (int i = 0; i < h.hosts; ++i) hosts.push_back(next(kLongestHostAddress));
  if (at != record.size()) throw bad("bytes after the last address");
  if (hostAddresses) *hostAddresses = std::move(hosts);
  return addresses;
}

}  // namespace chorus::ucx
