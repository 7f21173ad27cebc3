#include "transports/ib/ib_qp.hpp"

#include "errors.hpp"

#include <algorithm>
#include <cstring>

namespace chorus::ib {
namespace {

constexpr uint32_t kMagic = 0x33424943;  // "CIB3"

struct Header {  // fixed part of the wire record, then `rails` RailAddress, `qps` QpAddress
  uint32_t magic;
  int32_t from, to;
  uint32_t ethernet;
  uint64_t block, ring, ringAddr, rendezvous;
  uint32_t rails;
  uint32_t qps;
};

}  // namespace

std::vector<std::byte> PeerInfo::encode() const {
  Header h{};
  h.magic = kMagic;
  h.from = from;
  h.to = to;
  h.ethernet = ethernet;
  h.block = block;
  h.ring = ring;
  h.ringAddr = ringAddr;
  h.rendezvous = rendezvous;
  h.rails = static_cast<uint32_t>(rails.size());
  h.qps = static_cast<uint32_t>(qps.size());
  const size_t railBytes = rails.size() * sizeof(RailAddress);
  std::vector<std::byte> out(sizeof(h) + railBytes + qps.size() * sizeof(QpAddress));
  std::memcpy(out.data(), &h, sizeof(h));
  // memcpy from an empty vector's null data() is undefined
  if (!rails.empty()) std::memcpy(out.data() + sizeof(h), rails.data(), railBytes);
  if (!qps.empty())
    std::memcpy(out.data() + sizeof(h) + railBytes, qps.data(), qps.size() * sizeof(QpAddress));
  return out;
}

PeerInfo PeerInfo::decode(std::span<const std::byte> bytes, int peer) {
  Header h{};
  if (bytes.size() >= sizeof(h)) std::memcpy(&h, bytes.data(), sizeof(h));
  // 1..64 QPs (CHORUS_IB_QPS_PER_CONNECTION), 1..64 rails, ethernet a flag (0 or 1: any
  // other value would be read as one and be a different record); the size must match exactly.
  if (bytes.size() < sizeof(h) || h.magic != kMagic || h.qps == 0 || h.qps > 128 || h.rails == 0 ||
      h.rails > 64 || h.ethernet > 1 ||
      bytes.size() != sizeof(h) + h.rails * sizeof(RailAddress) + h.qps * sizeof(QpAddress))
    throw Error(Result::InvalidUsage,
                "ib: malformed connection record from rank " + std::to_string(peer));
  PeerInfo p;
  p.from = h.from;
  p.to = h.to;
  p.ethernet = static_cast<uint8_t>(h.ethernet);
  p.block = h.block;
  p.ring = h.ring;
  p.ringAddr = h.ringAddr;
  p.rendezvous = h.rendezvous;
  p.rails.resize(h.rails);
  std::memcpy(p.rails.data(), bytes.data() + sizeof(h), h.rails * sizeof(RailAddress));
  p.qps.resize(h.qps);
  std::memcpy(p.qps.data(), bytes.data() + sizeof(h) + h.rails * sizeof(RailAddress),
              h.qps * sizeof(QpAddress));
  return p;
}

ibv_qp* createQp(IbDevice& device, ibv_cq* cq, const IbConfig& config) {
  ibv_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = static_cast<uint32_t>(config.sendDepth);
  init.cap.max_recv_wr = static_cast<uint32_t>(config.recvDepth);
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(device.pd(), &init);
  if (!qp) throwSystemError("ib: ibv_create_qp on " + device.name());

  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = static_cast<uint8_t>(device.port());
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;  // READ: PeerMemory
  if (ibv_modify_qp(qp, &attr,
                    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
    ibv_destroy_qp(qp);
    throwSystemError("ib: QP to INIT on " + device.name());
  }
  return qp;
}

void connectQp(ibv_qp* qp, IbDevice& device, const IbConfig& config, uint32_t localPsn,
               bool ethernet, const RailAddress& remote, const QpAddress& remoteQp, int peer) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = std::min(device.mtu(), static_cast<ibv_mtu>(remote.mtu));
  attr.dest_qp_num = remoteQp.qpn;
  attr.rq_psn = remoteQp.psn;
  attr.max_dest_rd_atomic = static_cast<uint8_t>(std::clamp(device.attr().max_qp_rd_atom, 1, 16));
  attr.min_rnr_timer = 12;  // 0.64 ms before a sender retries a write nobody posted for
  attr.ah_attr.port_num = static_cast<uint8_t>(device.port());
  attr.ah_attr.sl = static_cast<uint8_t>(config.serviceLevel);
  if (ethernet) {
    attr.ah_attr.is_global = 1;
    std::memcpy(attr.ah_attr.grh.dgid.raw, remote.gid, 16);
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(device.gidIndex());
    attr.ah_attr.grh.hop_limit = 255;
    attr.ah_attr.grh.traffic_class = static_cast<uint8_t>(config.trafficClass);
  } else {
    attr.ah_attr.dlid = remote.lid;
  }
  const std::string who = "ib: connecting to rank " + std::to_string(peer);
  if (ibv_modify_qp(qp, &attr,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
    throwSystemError(who + " (QP to RTR)");

  attr = {};
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = static_cast<uint8_t>(config.timeout);
  attr.retry_cnt = static_cast<uint8_t>(config.retryCnt);
  attr.rnr_retry = 7;  // infinite: a receiver that is only slow to repost is not an error
  attr.sq_psn = localPsn;
  attr.max_rd_atomic = static_cast<uint8_t>(std::clamp(device.attr().max_qp_init_rd_atom, 1, 16));
  if (ibv_modify_qp(qp, &attr,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0)
    throwSystemError(who + " (QP to RTS)");
}

}  // namespace chorus::ib
