// One RDMA device port, opened once per process: a device's first active port that
// CHORUS_IB_HCA allows (every allowed device is a rail: openRails), its addressing (LID on
// InfiniBand, a GID on RoCE), a protection domain, the registration cache and buffer pool, and the
// device's asynchronous events. Devices stay open for the life of the process (as NCCL's do), so
// communicators made later reuse their registrations.
#pragma once

#include "transports/ib/ib_config.hpp"
#include "transports/ib/reg_cache.hpp"

#include <infiniband/verbs.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace chorus::ib {

class IbDevice {
 public:
  // Every device with an active port that CHORUS_IB_HCA allows, ordered by name: the
  // rails a connection stripes its QPs over (QP q on rail q % rails). Throws
  // Error(SystemError) naming what was found when no allowed port is active.
  static std::vector<std::shared_ptr<IbDevice>> openRails(const IbConfig& config);
  // The first rail.
  static std::shared_ptr<IbDevice> open(const IbConfig& config);
  ~IbDevice();
  IbDevice(const IbDevice&) = delete;
  IbDevice& operator=(const IbDevice&) = delete;

  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  const std::string& name() const { return name_; }
  int port() const { return port_; }
  bool ethernet() const { return ethernet_; }  // RoCE: address by GID, else by LID
  uint16_t lid() const { return lid_; }
  const ibv_gid& gid() const { return gid_; }
  int gidIndex() const { return gidIndex_; }
  ibv_mtu mtu() const { return mtu_; }
  const ibv_device_attr& attr() const { return attr_; }
  std::string describe() const;  // for logs: "rxe0:1 RoCE GID[1] ::ffff:10.77.0.1 MTU 1024"

  RegCache& cache() { return *cache_; }
  BufferPool& pool() { return *pool_; }

  // Asynchronous events: the fd is non-blocking; drainAsyncEvents() reads what is there
  // and records QP and port failures; the generation changes whenever one is recorded.
  int asyncFd() const { return context_->async_fd; }
  void drainAsyncEvents();
  uint64_t asyncGeneration() const { return generation_.load(); }
  std::string qpFailure(uint32_t qpn) const;  // empty if none
  std::string portFailure() const;            // empty while the port is fine

 private:
  IbDevice() = default;
  static std::shared_ptr<IbDevice> openPort(ibv_device* device, const HcaFilter& filter,
                                            const IbConfig& config, std::string& seen);

  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  std::string name_;
  int port_ = 0;
  bool ethernet_ = false;
  uint16_t lid_ = 0;
  ibv_gid gid_{};
  int gidIndex_ = 0;
  ibv_mtu mtu_ = IBV_MTU_1024;
  ibv_device_attr attr_{};
  std::unique_ptr<RegCache> cache_;
  std::unique_ptr<BufferPool> pool_;

  mutable std::mutex eventsMutex_;
  std::map<uint32_t, std::string> qpFailures_;
  std::string portFailure_;
  std::atomic<uint64_t> generation_{0};
};

// True when some port that CHORUS_IB_HCA allows is active. Never throws.
bool anyActivePort(const std::string& hcaSpec);

}  // namespace chorus::ib
