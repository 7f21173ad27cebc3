#include "transports/ib/ib_config.hpp"

#include "errors.hpp"
#include "settings/settings.hpp"

#include <algorithm>
#include <cstdlib>

namespace chorus::ib {
namespace {

int envRange(const char* name, int fallback, int lo, int hi) {
  int64_t v = settings::integer(name);  // fallback: the registry holds the default
  if (v < lo || v > hi)
    throwInvalid(std::string(name) + "=" + std::to_string(v) + " is outside " + std::to_string(lo) +
                 ".." + std::to_string(hi));
  return static_cast<int>(v);
}

}  // namespace

IbConfig IbConfig::fromEnv() {
  IbConfig c;
  c.hca = settings::text("CHORUS_IB_HCA");
  c.gidIndex = envRange("CHORUS_IB_GID_INDEX", -1, -1, 1 << 16);
  c.trafficClass = envRange("CHORUS_IB_TC", 0, 0, 255);
  c.serviceLevel = envRange("CHORUS_IB_SL", 0, 0, 15);
  c.qps = envRange("CHORUS_IB_QPS_PER_CONNECTION", 1, 1, 64);
  c.timeout = envRange("CHORUS_IB_TIMEOUT", 20, 1, 31);
  c.retryCnt = envRange("CHORUS_IB_RETRY_CNT", 7, 0, 7);
  c.block = std::clamp<size_t>(settings::bytes("CHORUS_IB_BLOCK"), 4096, size_t{1} << 30);
  c.block = (c.block + 4095) & ~size_t{4095};
  // Room for two blocks per QP keeps every QP busy while the receiver drains the ring.
  size_t ring = std::max(settings::bytes("CHORUS_IB_BUFFER"), 2 * c.block * c.qps);
  c.ring = (ring + c.block - 1) / c.block * c.block;  // block boundaries meet the wrap
  if (c.ring >= (size_t{1} << 31)) throwInvalid("CHORUS_IB_BUFFER: the ring must be < 2 GiB");
  c.rendezvous = settings::bytes("CHORUS_IB_RNDV_BYTES");
  c.rndvStreamed = settings::bytes("CHORUS_IB_RNDV_STREAMED");
  c.bounce = settings::bytes("CHORUS_IB_BOUNCE");
  c.regCache = settings::bytes("CHORUS_IB_REG_CACHE");
  return c;
}

HcaFilter::HcaFilter(std::string_view spec) {
  if (!spec.empty() && spec.front() == '^') {
    exclude_ = true;
    spec.remove_prefix(1);
  }
  if (!spec.empty() && spec.front() == '=') {
    exact_ = true;
    spec.remove_prefix(1);
  }
  for (const std::string& item : settings::splitList(spec)) {
    if (item.empty()) continue;
    Entry e;
    auto colon = item.find(':');
    e.name = item.substr(0, colon);
    if (colon != std::string::npos) e.port = std::atoi(item.substr(colon + 1).c_str());
    entries_.push_back(std::move(e));
  }
}

bool HcaFilter::allows(std::string_view device, int port) const {
  if (entries_.empty()) return true;
  bool listed = std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) {
    bool name = exact_ ? device == e.name : device.substr(0, e.name.size()) == e.name;
    return name && (e.port == 0 || e.port == port);
  });
  return listed != exclude_;
}

bool isIpv4Mapped(const uint8_t raw[16]) {
  for (int i = 0; i < 10; ++i)
    if (raw[i] != 0) return false;
  return raw[10] == 0xff && raw[11] == 0xff;
}

int pickGid(const std::vector<GidEntry>& table, int forced) {
  auto nonZero = [](const GidEntry& e) {
    return std::any_of(std::begin(e.raw), std::end(e.raw), [](uint8_t b) { return b != 0; });
  };
  if (forced >= 0) {
    for (const auto& e : table)
      if (e.index == forced) return forced;
    return -1;
  }
  for (const auto& e : table)
    if (e.type == GidType::RoceV2 && isIpv4Mapped(e.raw)) return e.index;
  for (const auto& e : table)
    if (e.type == GidType::RoceV2 && nonZero(e)) return e.index;
  for (const auto& e : table)
    if (nonZero(e)) return e.index;
  return -1;
}

}  // namespace chorus::ib
