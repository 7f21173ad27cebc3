#include "transports/ucx/ucx_resources.hpp"

#include "errors.hpp"
#include "log.hpp"
#include "net/host_probe.hpp"
#include "transports/ucx/ucx_keepalive.hpp"

#include <cstdlib>
#include <string>

namespace chorus::ucx {

void throwStatus(const std::string& what, ucs_status_t status) {
  throw Error(Result::SystemError, "ucx: " + what + ": " + ucs_status_string(status));
}

Context::Context(int estimatedEndpoints, const std::string& netDevices,
                 std::chrono::milliseconds keepalive) {
  ucp_config_t* config = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) throwStatus("reading the UCX configuration", status);
  if (const std::optional<TcpKeepalive> tcp = tcpKeepalive(netDevices, keepalive)) {
    configure(config, *tcp);
    acceptedKeepalive_ = acceptedTimes(*tcp);
  }
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
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP | UCP_FEATURE_RMA;  // RMA: peer memory
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
  // The worker opens its transports, tcp's listener among them: the ports that were not
  // listened on before are UCX's (another thread's listener opened meanwhile would be taken
  // for one).
  const std::set<uint16_t> before = net::listeningPorts();
  ucs_status_t status = ucp_worker_create(context.get(), &params, &worker_);
  if (status != UCS_OK) throwStatus("ucp_worker_create", status);
  for (const uint16_t port : net::listeningPorts())
    if (before.count(port) == 0) listeningPorts_.insert(port);
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
