// Verbs transport settings (environment, read once per transport) and the two pure
// decisions that need no device: which HCA/port a CHORUS_IB_HCA spec allows, and which
// GID a RoCE port should use. Kept free of verbs calls so that they are unit-testable
// on a machine without RDMA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chorus::ib {

struct IbConfig {
  std::string hca;              // CHORUS_IB_HCA: NCCL syntax, see HcaFilter
  int gidIndex = -1;            // CHORUS_IB_GID_INDEX: force a GID (RoCE); -1: pick
  int trafficClass = 0;         // CHORUS_IB_TC: GRH traffic class (RoCE DSCP << 2)
  int serviceLevel = 0;         // CHORUS_IB_SL
  int qps = 1;                  // CHORUS_IB_QPS_PER_CONNECTION: 1..64 QPs per peer (striping paths)
  size_t block = 128 << 10;     // CHORUS_IB_BLOCK: striping unit across the QPs
  size_t ring = 2 << 20;        // CHORUS_IB_BUFFER: receive ring per peer (multiple of block)
  int timeout = 20;             // CHORUS_IB_TIMEOUT: ack timeout 4.096 us * 2^timeout
  int retryCnt = 7;             // CHORUS_IB_RETRY_CNT: transport retries
  size_t regCache = 256 << 20;  // CHORUS_IB_REG_CACHE: registered bytes kept when idle
  size_t rendezvous = 64 << 10;  // CHORUS_IB_RNDV_BYTES: zero-copy from this size; 0: never
  size_t rndvStreamed = 0;       // CHORUS_IB_RNDV_STREAMED: head and tail streamed instead
  size_t bounce = 16 << 20;      // CHORUS_IB_BOUNCE: largest message landing in the bounce buffer
  int sendDepth = 128;           // work requests per QP send queue
  int recvDepth = 512;           // posted receives per QP
  static IbConfig fromEnv();
};

// CHORUS_IB_HCA as NCCL reads NCCL_IB_HCA: "mlx5_0:1,mlx5_1" lists devices (optionally
// a port); a leading '^' excludes the listed ones instead; a leading '=' (after any '^')
// makes names exact, otherwise a name is a prefix ("mlx5" matches mlx5_0, mlx5_1).
class HcaFilter {
 public:
  explicit HcaFilter(std::string_view spec);
  bool allows(std::string_view device, int port) const;

 private:
  struct Entry {
    std::string name;
    int port = 0;  // 0: any
  };
  bool exclude_ = false;
  bool exact_ = false;
  std::vector<Entry> entries_;
};

enum class GidType { IbOrRoceV1, RoceV2 };
struct GidEntry {
  int index = 0;
  uint8_t raw[16] = {};
  GidType type = GidType::IbOrRoceV1;
};

bool isIpv4Mapped(const uint8_t raw[16]);
// The GID index to use on a RoCE port: `forced` when >= 0 (it must be in the table),
// else the first RoCE v2 IPv4-mapped entry (routable over IPv4 fabrics, what NCCL
// prefers), else the first RoCE v2, else the first non-zero one. -1 when none fits.
int pickGid(const std::vector<GidEntry>& table, int forced);

}  // namespace chorus::ib
