// Reliable-connected queue pairs and what two ranks exchange through the store to
// connect them: addressing (LID or GID), MTU, the QP numbers and starting PSNs, and
// where the receiver's ring is (address, rkey). Also carries the striping parameters,
// so that ranks started with different settings fail loudly, not silently.
#pragma once

#include "transports/ib/ib_config.hpp"
#include "transports/ib/ib_device.hpp"

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace chorus::ib {

struct QpAddress {
  uint32_t qpn = 0;
  uint32_t psn = 0;
};

// How to reach one rail (device) of a rank, and its key to the receive ring there.
struct RailAddress {
  uint8_t gid[16] = {};
  uint16_t lid = 0;
  uint8_t mtu = 0;  // ibv_mtu
  uint8_t pad = 0;
  uint32_t rkey = 0;  // the ring's key on this rail's device
};

// What rank `from` tells rank `to` about its side of their connection. QP q travels on
// rail q % rails.size() on both sides (rails pair by index: rail i with rail i).
struct PeerInfo {
  int32_t from = -1;
  int32_t to = -1;
  uint8_t ethernet = 0;
  uint64_t block = 0;
  uint64_t ring = 0;
  uint64_t ringAddr = 0;    // the ring `to` writes into
  uint64_t rendezvous = 0;  // CHORUS_IB_RNDV_BYTES (must match)
  std::vector<RailAddress> rails;
  std::vector<QpAddress> qps;

  std::vector<std::byte> encode() const;
  // Throws Error(InvalidUsage) naming `peer` on a malformed record.
  static PeerInfo decode(std::span<const std::byte> bytes, int peer);
};

// A new RC QP in the INIT state (remote writes allowed), both queues on `cq`.
ibv_qp* createQp(IbDevice& device, ibv_cq* cq, const IbConfig& config);
// INIT -> RTR -> RTS towards `remoteQp` on the peer's rail `remote`. Throws
// Error(SystemError) naming `peer`.
void connectQp(ibv_qp* qp, IbDevice& device, const IbConfig& config, uint32_t localPsn,
               bool ethernet, const RailAddress& remote, const QpAddress& remoteQp, int peer);

}  // namespace chorus::ib
