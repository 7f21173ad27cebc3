// chorus._chorus_torch: the ProcessGroup class and the creator function that
// chorus/torch.py registers with torch.distributed.Backend.register_backend.
#include "process_group.hpp"

#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

namespace py = pybind11;
using chorus::torchpg::ChorusWork;
using chorus::torchpg::ProcessGroupChorus;

PYBIND11_MODULE(_chorus_torch, m) {
  m.doc() = "Chorus process group for torch.distributed (import chorus.torch to register it)";
  py::module_::import("torch.distributed");  // registers c10d's ProcessGroup and Store types
  py::class_<ProcessGroupChorus, c10d::ProcessGroup, c10::intrusive_ptr<ProcessGroupChorus>>(
      m, "ProcessGroupChorus")
      .def(py::init<const c10::intrusive_ptr<c10d::Store>&, int, int, std::chrono::milliseconds>(),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("transport", &ProcessGroupChorus::transportName,
                             "the Chorus transport in use: shm, tcp, ib or ucx")
      .def_property_readonly("failed_ranks", &ProcessGroupChorus::failedRanks,
                             "the ranks known to have failed, once a collective raised "
                             "(leave them out of the next group); [] before")
      .def("algorithm_for", &ProcessGroupChorus::algorithmFor, py::arg("collective"),
           py::arg("tensor"),
           "the algorithm a call of `collective` (\"allreduce\", \"allgather\", "
           "\"reducescatter\", \"broadcast\", \"reduce\", \"alltoall\") on `tensor` would "
           "run now")
      .def("set_algorithm", &ProcessGroupChorus::setAlgorithm, py::arg("spec"),
           "forces algorithms as CHORUS_ALGO does (\"allreduce:rd\"; \"auto\" undoes it); "
           "every rank must set the same");
  // The works this group returns: torch hands them to Python as their most derived
  // registered type, so `work.algorithm` is there on dist.all_reduce(..., async_op=True).
  py::class_<ChorusWork, c10d::Work, c10::intrusive_ptr<ChorusWork>>(m, "ChorusWork")
      .def_property_readonly("algorithm", &ChorusWork::algorithm,
                             "the algorithm of each Chorus operation this work ran "
                             "(Work::algorithm(): \"ring\", \"mailbox\", ...), distinct, "
                             "joined by \",\"");
  m.def(
      "create_process_group",
      [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
         std::chrono::milliseconds timeout) {
        return c10::make_intrusive<ProcessGroupChorus>(store, rank, size, timeout);
      },
      py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
      py::call_guard<py::gil_scoped_release>());
}
