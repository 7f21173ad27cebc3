// RAII owners of the UCP objects the UCX transport uses: a context (features: tag
// matching, wake-up and RMA) and a worker (serialized: one engine thread drives it) per device
// (CHORUS_UCX_NET_DEVICES), and memory mapped through ucp_mem_map for the staging buffers.
#pragma once

#include "net/socket.hpp"

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>

namespace chorus::ucx {

// "ucx: <what>: <UCX's text for status>"; throws Error(SystemError).
[[noreturn]] void throwStatus(const std::string& what, ucs_status_t status);

class Context {
 public:
  // netDevices: UCX's NET_DEVICES for this context (e.g. "rail0" or "mlx5_0:1"); empty:
  // UCX's configuration (UCX_NET_DEVICES or all devices). keepalive: CHORUS_KEEPALIVE, for
  // UCX's tcp transport's connections where the user did not set UCX's own (0: UCX's).
  Context(int estimatedEndpoints, const std::string& netDevices,
          std::chrono::milliseconds keepalive);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ucp_context_h get() const { return context_; }
  // The keepalive for the TCP connections UCX accepted (ucx_keepalive.hpp); empty: none.
  const std::optional<net::KeepaliveTimes>& acceptedKeepalive() const { return acceptedKeepalive_; }

 private:
  ucp_context_h context_ = nullptr;
  std::optional<net::KeepaliveTimes> acceptedKeepalive_;
};

class Worker {
 public:
  explicit Worker(const Context& context);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ucp_worker_h get() const { return worker_; }
  int eventFd() const { return efd_; }
  // The worker's address, for peers to create endpoints to it.
  std::string address() const;
  // One progress pass; true when something happened.
  bool progress() { return ucp_worker_progress(worker_) != 0; }
  // The TCP ports this worker's transports listen on (UCX's tcp transport's).
  const std::set<uint16_t>& listeningPorts() const { return listeningPorts_; }

 private:
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;
  std::set<uint16_t> listeningPorts_;
};

// `bytes` of page-aligned memory registered with the context.
class MappedMemory {
 public:
  MappedMemory(const Context& context, size_t bytes);
  ~MappedMemory();
  MappedMemory(const MappedMemory&) = delete;
  MappedMemory& operator=(const MappedMemory&) = delete;
  std::byte* data() const { return data_; }
  ucp_mem_h handle() const { return memh_; }

 private:
  ucp_context_h context_;
  std::byte* data_ = nullptr;
  ucp_mem_h memh_ = nullptr;
};

}  // namespace chorus::ucx
