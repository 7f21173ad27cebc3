#include "transports/ucx/ucx_resources.hpp"

#include "errors.hpp"
#include "log.hpp"
#include "net/socket.hpp"
#include "settings/settings.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace chorus::ucx {

void throwStatus(const std::string& what, ucs_status_t status) {
  throw Error(Result::SystemError, "ucx: " + what + ": " + ucs_status_string(status));
}

namespace {

// Whether a context on `netDevices` may open UCX's tcp transport: a network interface among
// them (UCX's choice, or a name without the port of an RDMA device's "mlx5_0:1"), and tcp
// not left out by UCX_TLS. Keys that no transport of a worker takes earn UCX's "invalid
// configuration" warning.
bool mayUseTcp(const std::string& netDevices) {
  const std::vector<std::string> devices = settings::splitList(netDevices);
  const bool interface =
      devices.empty() || std::any_of(devices.begin(), devices.end(), [](const std::string& d) {
        return d.find(':') == std::string::npos;
      });
  const char* tls = std::getenv("UCX_TLS");
  if (!interface || tls == nullptr || *tls == '\0') return interface;
  const std::string list = tls;
  const bool named = list.find("tcp") != std::string::npos;
  return list[0] == '^' ? !named : named || list.find("all") != std::string::npos;
}

// CHORUS_KEEPALIVE onto UCX's tcp transport, which sets its sockets' keepalive itself
// (UCX_TCP_KEEPIDLE, KEEPINTVL, KEEPCNT; 10 s, 2 s and the kernel's 9 probes by default):
// the same probes as the tcp transport's (net::keepaliveTimes), each where the user's
// environment does not set UCX's variable. UCX 1.13 sets no TCP_USER_TIMEOUT, so a
// connection with unacknowledged data lives as long as the kernel's resends instead.
// ucp_config_modify hands names UCP does not know to each transport's configuration.
void applyKeepalive(ucp_config_t* config, const std::string& netDevices,
                    std::chrono::milliseconds limit) {
  if (limit.count() <= 0 || !mayUseTcp(netDevices)) return;
  const net::KeepaliveTimes times = net::keepaliveTimes(limit);
  // UCX keeps times in clock ticks and truncates them to whole seconds for the socket: "4s"
  // can come back as 3. Half a second more lands on the intended second.
  const std::pair<const char*, std::string> settings[] = {
      {"KEEPIDLE", std::to_string(times.idleSeconds) + ".5s"},
      {"KEEPINTVL", std::to_string(times.intervalSeconds) + ".5s"},
      {"KEEPCNT", std::to_string(times.probes)}};
  for (const auto& [name, value] : settings) {
    const std::string variable = std::string("UCX_TCP_") + name;
    if (std::getenv(variable.c_str()) != nullptr) continue;  // the user's
    if (const ucs_status_t status = ucp_config_modify(config, name, value.c_str());
        status != UCS_OK)
      logf(LogLevel::Warn, "ucx: CHORUS_KEEPALIVE not applied: %s=%s: %s", variable.c_str(),
           value.c_str(), ucs_status_string(status));
  }
}

}  // namespace

Context::Context(int estimatedEndpoints, const std::string& netDevices,
                 std::chrono::milliseconds keepalive) {
  ucp_config_t* config = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) throwStatus("reading the UCX configuration", status);
  applyKeepalive(config, netDevices, keepalive);
  if (!netDevices.empty()) {
    status = ucp_config_modify(config, "NET_DEVICES", netDevices.c_str());
    if (status != UCS_OK) {
      ucp_config_release(config);
      throwStatus("NET_DEVICES='" + netDevices + "'", status);
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS |
                      UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.estimated_num_eps = static_cast<size_t>(estimatedEndpoints);
  params.mt_workers_shared = 0;
  status = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (status != UCS_OK) throwStatus("ucp_init", status);
}

Context::~Context() {
  if (context_) ucp_cleanup(context_);
}

Worker::Worker(const Context& context) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  ucs_status_t status = ucp_worker_create(context.get(), &params, &worker_);
  if (status != UCS_OK) throwStatus("ucp_worker_create", status);
  status = ucp_worker_get_efd(worker_, &efd_);
  if (status != UCS_OK) {
    ucp_worker_destroy(worker_);
    throwStatus("ucp_worker_get_efd", status);
  }
}

Worker::~Worker() {
  if (worker_) ucp_worker_destroy(worker_);
}

std::string Worker::address() const {
  ucp_address_t* address = nullptr;
  size_t length = 0;
  ucs_status_t status = ucp_worker_get_address(worker_, &address, &length);
  if (status != UCS_OK) throwStatus("ucp_worker_get_address", status);
  std::string bytes(reinterpret_cast<const char*>(address), length);
  ucp_worker_release_address(worker_, address);
  return bytes;
}

MappedMemory::MappedMemory(const Context& context, size_t bytes) : context_(context.get()) {
  size_t rounded = (bytes + 4095) & ~size_t{4095};
  data_ = static_cast<std::byte*>(std::aligned_alloc(4096, rounded));
  if (!data_) throw Error(Result::SystemError, "ucx: out of memory for staging buffers");
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = data_;
  params.length = rounded;
  ucs_status_t status = ucp_mem_map(context_, &params, &memh_);
  if (status != UCS_OK) {
    std::free(data_);
    throwStatus("ucp_mem_map of " + std::to_string(rounded) + " bytes", status);
  }
}

MappedMemory::~MappedMemory() {
  if (memh_) ucp_mem_unmap(context_, memh_);
  std::free(data_);
}

}  // namespace chorus::ucx
