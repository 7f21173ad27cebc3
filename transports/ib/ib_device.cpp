#include "transports/ib/ib_device.hpp"

#include "errors.hpp"
#include "log.hpp"

#include <arpa/inet.h>
#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace chorus::ib {
namespace {

struct DeviceList {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  ~DeviceList() {
    if (list) ibv_free_device_list(list);
  }
};

const char* stateName(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_ACTIVE:
      return "ACTIVE";
    case IBV_PORT_DOWN:
      return "DOWN";
    case IBV_PORT_INIT:
      return "INIT";
    case IBV_PORT_ARMED:
      return "ARMED";
    default:
      return "not active";
  }
}

std::vector<GidEntry> gidTable(ibv_context* ctx, int port, int length) {
  std::vector<GidEntry> table;
  for (int i = 0; i < length; ++i) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(ctx, port, i, &entry, 0) != 0) continue;  // empty slot
    GidEntry e;
    e.index = i;
    std::memcpy(e.raw, entry.gid.raw, 16);
    e.type = entry.gid_type == IBV_GID_TYPE_ROCE_V2 ? GidType::RoceV2 : GidType::IbOrRoceV1;
    table.push_back(e);
  }
  return table;
}

std::string gidText(const ibv_gid& gid) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, gid.raw, text, sizeof(text));
  return text;
}

std::mutex gOpenMutex;
// Never destroyed: devices live as long as the process (see the header).
auto* gOpen = new std::map<std::string, std::vector<std::shared_ptr<IbDevice>>>;

}  // namespace

bool anyActivePort(const std::string& hcaSpec) {
  HcaFilter filter(hcaSpec);
  DeviceList devices;
  for (int d = 0; d < devices.count; ++d) {
    ibv_context* ctx = ibv_open_device(devices.list[d]);
    if (!ctx) continue;
    ibv_device_attr attr{};
    bool found = false;
    if (ibv_query_device(ctx, &attr) == 0) {
      for (int p = 1; p <= attr.phys_port_cnt && !found; ++p) {
        ibv_port_attr pa{};
        found = ibv_query_port(ctx, p, &pa) == 0 && pa.state == IBV_PORT_ACTIVE &&
                filter.allows(ibv_get_device_name(devices.list[d]), p);
      }
    }
    ibv_close_device(ctx);
    if (found) return true;
  }
  return false;
}

// The first active port of `device` that `filter` allows, opened; null if none. `seen`
// collects what was found, for the error when nothing is usable.
std::shared_ptr<IbDevice> IbDevice::openPort(ibv_device* device, const HcaFilter& filter,
                                             const IbConfig& config, std::string& seen) {
  const char* name = ibv_get_device_name(device);
  ibv_context* ctx = ibv_open_device(device);
  if (!ctx) {
    seen += std::string(seen.empty() ? "" : ", ") + name + " (cannot open)";
    return nullptr;
  }
  std::shared_ptr<IbDevice> dev(new IbDevice);
  dev->context_ = ctx;  // closed by the destructor from here on
  dev->name_ = name;
  if (ibv_query_device(ctx, &dev->attr_) != 0) return nullptr;
  for (int p = 1; p <= dev->attr_.phys_port_cnt; ++p) {
    ibv_port_attr pa{};
    if (ibv_query_port(ctx, p, &pa) != 0) continue;
    seen += (seen.empty() ? "" : ", ") + dev->name_ + ":" + std::to_string(p) + " " +
            stateName(pa.state);
    if (pa.state != IBV_PORT_ACTIVE || !filter.allows(dev->name_, p)) continue;
    dev->port_ = p;
    dev->ethernet_ = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
    dev->lid_ = pa.lid;
    dev->mtu_ = pa.active_mtu;
    if (dev->ethernet_) {
      dev->gidIndex_ = pickGid(gidTable(ctx, p, pa.gid_tbl_len), config.gidIndex);
      if (dev->gidIndex_ < 0) {
        seen += " (no usable GID" +
                (config.gidIndex >= 0 ? " at CHORUS_IB_GID_INDEX=" + std::to_string(config.gidIndex)
                                      : std::string()) +
                ")";
        continue;
      }
    } else {
      dev->gidIndex_ = config.gidIndex >= 0 ? config.gidIndex : 0;
    }
    if (ibv_query_gid(ctx, p, dev->gidIndex_, &dev->gid_) != 0)
      throwSystemError("ib: ibv_query_gid(" + dev->name_ + ", index " +
                       std::to_string(dev->gidIndex_) + ")");
    dev->pd_ = ibv_alloc_pd(ctx);
    if (!dev->pd_) throwSystemError("ib: ibv_alloc_pd on " + dev->name_);
    int flags = fcntl(ctx->async_fd, F_GETFL);
    fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
    dev->cache_ = std::make_unique<RegCache>(
        dev->pd_, config.regCache,
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    dev->pool_ = std::make_unique<BufferPool>(*dev->cache_, config.regCache);
    logf(LogLevel::Info, "ib: using %s", dev->describe().c_str());
    return dev;
  }
  return nullptr;
}

std::vector<std::shared_ptr<IbDevice>> IbDevice::openRails(const IbConfig& config) {
  std::lock_guard lock(gOpenMutex);
  const std::string key = config.hca + "|" + std::to_string(config.gidIndex);
  if (auto it = gOpen->find(key); it != gOpen->end()) return it->second;

  HcaFilter filter(config.hca);
  DeviceList devices;
  std::vector<ibv_device*> sorted(devices.list, devices.list + devices.count);
  // Rail i of one node pairs with rail i of every other: a stable order, by name.
  std::sort(sorted.begin(), sorted.end(), [](ibv_device* a, ibv_device* b) {
    return std::strcmp(ibv_get_device_name(a), ibv_get_device_name(b)) < 0;
  });
  std::vector<std::shared_ptr<IbDevice>> rails;
  std::string seen;
  for (ibv_device* d : sorted) {
    auto dev = openPort(d, filter, config, seen);
    if (!dev) continue;
    // One connection addresses all its rails alike (GID on RoCE, LID on InfiniBand).
    if (!rails.empty() && dev->ethernet() != rails[0]->ethernet()) {
      logf(LogLevel::Info, "ib: not using %s as a rail: its link layer differs from %s's",
           dev->name().c_str(), rails[0]->name().c_str());
      continue;
    }
    rails.push_back(std::move(dev));
  }
  if (rails.empty())
    throw Error(
        Result::SystemError,
        "ib: no active RDMA port" +
            (config.hca.empty() ? std::string() : " matching CHORUS_IB_HCA='" + config.hca + "'") +
            " (found: " + (seen.empty() ? "no devices" : seen) + ")");
  gOpen->emplace(key, rails);
  return rails;
}

std::shared_ptr<IbDevice> IbDevice::open(const IbConfig& config) { return openRails(config)[0]; }

IbDevice::~IbDevice() {
  pool_.reset();
  cache_.reset();
  if (pd_) ibv_dealloc_pd(pd_);
  if (context_) ibv_close_device(context_);
}

std::string IbDevice::describe() const {
  std::string s = name_ + ":" + std::to_string(port_);
  s += ethernet_ ? " RoCE GID[" + std::to_string(gidIndex_) + "] " + gidText(gid_)
                 : " InfiniBand LID " + std::to_string(lid_);
  return s + " MTU " + std::to_string(128 << mtu_);
}

void IbDevice::drainAsyncEvents() {
  ibv_async_event event{};
  while (ibv_get_async_event(context_, &event) == 0) {
    std::string what = ibv_event_type_str(event.event_type);
    {
      std::lock_guard lock(eventsMutex_);
      switch (event.event_type) {
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
        case IBV_EVENT_PATH_MIG_ERR:
          qpFailures_.emplace(event.element.qp->qp_num, what);
          ++generation_;
          break;
        case IBV_EVENT_PORT_ERR:
          if (event.element.port_num == port_) {
            portFailure_ = "port " + name_ + ":" + std::to_string(port_) + " went down";
            ++generation_;
          }
          break;
        case IBV_EVENT_DEVICE_FATAL:
          portFailure_ = "device " + name_ + " failed (" + what + ")";
          ++generation_;
          break;
        default:
          break;  // COMM_EST, LID/GID changes, last WQE reached: nothing to do
      }
    }
    ibv_ack_async_event(&event);
  }
}

std::string IbDevice::qpFailure(uint32_t qpn) const {
  std::lock_guard lock(eventsMutex_);
  auto it = qpFailures_.find(qpn);
  return it == qpFailures_.end() ? std::string() : it->second;
}

std::string IbDevice::portFailure() const {
  std::lock_guard lock(eventsMutex_);
  return portFailure_;
}

}  // namespace chorus::ib
