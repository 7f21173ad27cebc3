// What this library was built with and what this host offers it: chorus-info's content.
#pragma once

#include <string>
#include <vector>

namespace chorus::info {

struct Feature {
  std::string name;
  bool available = false;
  std::string detail;  // why (not): "no active RDMA device", "interfaces eth0, lo"
};

struct HostInfo {
  std::string version;
  std::vector<Feature> build;       // cuda, verbs, ucx, mpi: configured in
  std::vector<Feature> kernels;     // avx512, avx2, generic: this CPU can run it
  std::string activeKernels;        // the table reductions use (CHORUS_KERNEL_ISA caps it)
  std::vector<Feature> transports;  // shm, tcp, ib, ucx: usable on this host now
  std::string topologySummary;      // one line; the error if detection failed
  int gpus = 0;
};

HostInfo hostInfo();

}  // namespace chorus::info
