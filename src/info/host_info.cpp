#include "info/host_info.hpp"

#include "kernels/cpu/kernel_table.hpp"
#include "memory/shared_memory.hpp"
#include "net/socket.hpp"
#include "settings/settings.hpp"
#include "topology/topology.hpp"

#include <chorus/chorus.h>

#include <unistd.h>

#include <exception>

// Set for this file by CMakeLists.txt (the library itself has no MPI or CUDA code yet).
#ifndef CHORUS_BUILT_WITH_CUDA
#define CHORUS_BUILT_WITH_CUDA 0
#endif
#ifndef CHORUS_BUILT_WITH_MPI
#define CHORUS_BUILT_WITH_MPI 0
#endif

#if CHORUS_HAVE_VERBS
constexpr bool kVerbs = true;
#else
constexpr bool kVerbs = false;
#endif
#if CHORUS_HAVE_UCX
constexpr bool kUcx = true;
#else
constexpr bool kUcx = false;
#endif

namespace chorus {
#if CHORUS_HAVE_VERBS
bool ibDeviceAvailable();
#endif
}  // namespace chorus

namespace chorus::info {
namespace {

std::vector<Feature> buildOptions() {
  return {
      {"cuda", CHORUS_BUILT_WITH_CUDA != 0,
       CHORUS_BUILT_WITH_CUDA ? "CUDA reduction kernels built (not used by the engine yet)"
                              : "no CUDA compiler at configure time"},
      {"verbs", kVerbs, kVerbs ? "ib transport built" : "libibverbs-dev missing at configure time"},
      {"ucx", kUcx, kUcx ? "ucx transport built" : "libucx-dev missing at configure time"},
      {"mpi", CHORUS_BUILT_WITH_MPI != 0,
       CHORUS_BUILT_WITH_MPI ? "MPI launch tests and compare_mpi built"
                             : "no MPI at configure time"},
  };
}

std::vector<Feature> kernelIsas() {
  std::vector<Feature> isas;
  for (const char* isa : {"avx512", "avx2", "generic"}) {
    const bool runs = kernels::kernelTable(isa) != nullptr;
    isas.push_back({isa, runs, runs ? "this CPU runs it" : "compiled in; this CPU lacks it"});
  }
  return isas;
}

std::vector<Feature> transports() {
  std::vector<Feature> out;
  const bool shm = ::access("/dev/shm", W_OK) == 0;
  // memAlloc's pages matter for the one-sided path (peers map memAlloc buffers).
  const std::string pages = memory::pageKind();
  const std::string oneSided = "; one-sided: memAlloc buffers (memfd) on " + pages + " pages" +
                               (pages == "4k" ? " (no free hugetlb pages, shmem THP off)" : "") +
                               ", registered buffers by CMA";
  out.push_back(
      {"shm", shm,
       (shm ? "ranks on this host, /dev/shm writable" : "/dev/shm not writable") + oneSided});
  try {
    const std::string spec = settings::text("CHORUS_SOCKET_IFNAME");
    std::string names;
    for (const std::string& name : net::findInterfaceNames(spec))
      names += (names.empty() ? "" : ", ") + name;
    out.push_back({"tcp", !names.empty(),
                   names.empty() ? "no interface matches CHORUS_SOCKET_IFNAME='" + spec + "'"
                                 : "interfaces " + names});
  } catch (const std::exception& e) {
    out.push_back({"tcp", false, e.what()});
  }
#if CHORUS_HAVE_VERBS
  bool ib = false;
  std::string why;
  try {
    ib = ibDeviceAvailable();
    why = ib ? "an active RDMA port" : "no active RDMA device (or none CHORUS_IB_HCA allows)";
  } catch (const std::exception& e) {
    why = e.what();
  }
  out.push_back({"ib", ib, why});
#else
  out.push_back({"ib", false, "not built (libibverbs-dev missing at configure time)"});
#endif
#if CHORUS_HAVE_UCX
  out.push_back({"ucx", true, "built; UCX picks its devices when a communicator starts"});
#else
  out.push_back({"ucx", false, "not built (libucx-dev missing at configure time)"});
#endif
  return out;
}

}  // namespace

HostInfo hostInfo() {
  HostInfo h;
  h.version = std::to_string(CHORUS_MAJOR) + "." + std::to_string(CHORUS_MINOR) + "." +
              std::to_string(CHORUS_PATCH);
  h.build = buildOptions();
  h.kernels = kernelIsas();
  try {
    h.activeKernels = kernels::activeKernels().name;
  } catch (const std::exception& e) {
    h.activeKernels = std::string("error: ") + e.what();
  }
  h.transports = transports();
  try {
    const topo::Topology t = topo::detect();
    h.gpus = static_cast<int>(t.gpus.size());
    std::string nics;
    for (const topo::Nic& n : t.nics) {
      nics += (nics.empty() ? "" : ", ") + n.name + (n.up ? " up" : " down");
      if (n.speedMbps > 0) nics += " " + std::to_string(n.speedMbps) + " Mb/s";
    }
    h.topologySummary = "host " + t.hostname + ": " + std::to_string(t.packages) + " package(s), " +
                        std::to_string(t.cores) + " cores, " + std::to_string(t.pus) + " PUs, " +
                        std::to_string(t.numaNodes.size()) +
                        " NUMA node(s); NICs: " + (nics.empty() ? "none" : nics) + "; GPUs: " +
                        (t.gpus.empty() ? "none detected" : std::to_string(t.gpus.size()));
  } catch (const std::exception& e) {
    h.topologySummary = std::string("detection failed: ") + e.what();
  }
  return h;
}

}  // namespace chorus::info
