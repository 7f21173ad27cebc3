// chorus._chorus: the Chorus communicator for NumPy arrays (and anything with the buffer
// protocol that NumPy can view), for users who do not use torch. Every operation returns
// a Work; work.wait() releases the GIL while it drives the collective.
#include <chorus/chorus.hpp>

#include <pybind11/chrono.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>

namespace py = pybind11;

namespace {

using chorus::DataType;
using chorus::RedOp;

DataType typeOf(const py::dtype& d) {
  const char kind = d.kind();
  const auto size = d.itemsize();
  if (kind == 'f' && size == 2) return DataType::Float16;
  if (kind == 'f' && size == 4) return DataType::Float32;
  if (kind == 'f' && size == 8) return DataType::Float64;
  if (kind == 'i' && size == 1) return DataType::Int8;
  if (kind == 'i' && size == 4) return DataType::Int32;
  if (kind == 'i' && size == 8) return DataType::Int64;
  if (kind == 'u' && size == 1) return DataType::Uint8;
  if (kind == 'u' && size == 4) return DataType::Uint32;
  if (kind == 'u' && size == 8) return DataType::Uint64;
  throw py::type_error("chorus: no Chorus data type for numpy dtype " +
                       std::string(py::str(static_cast<py::handle>(d))) +
                       " (int8, uint8, int32, uint32, int64, uint64, float16, float32, float64)");
}

DataType typeOf(const py::array& a) { return typeOf(a.dtype()); }

RedOp opOf(const std::string& name) {
  if (name == "sum") return RedOp::Sum;
  if (name == "prod") return RedOp::Prod;
  if (name == "max") return RedOp::Max;
  if (name == "min") return RedOp::Min;
  if (name == "avg") return RedOp::Avg;
  throw py::value_error("chorus: unknown op '" + name + "' (sum, prod, max, min, avg)");
}

void checkContiguous(const py::array& a, const char* what, bool writable) {
  if (!(a.flags() & py::array::c_style))
    throw py::value_error(std::string("chorus: ") + what + " must be C-contiguous");
  if (writable && !a.writeable())
    throw py::value_error(std::string("chorus: ") + what + " must be writable");
}

void sameType(const py::array& a, const py::array& b) {
  if (typeOf(a) != typeOf(b)) throw py::type_error("chorus: send and receive dtypes differ");
}

// A Work that keeps the arrays it reads and writes alive until it completes.
struct PyWork {
  chorus::Work work;
  std::vector<py::object> keep;
  bool wait(double timeoutSeconds) {
    bool done;
    {
      py::gil_scoped_release release;
      done = timeoutSeconds < 0
                 ? work.wait()
                 : work.wait(std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1e3)));
    }
    if (done) keep.clear();
    return done;
  }
  bool test() {
    const bool done = work.test();
    if (done) keep.clear();
    return done;
  }
};

PyWork start(chorus::Work w, std::initializer_list<py::object> keep) {
  return PyWork{std::move(w), std::vector<py::object>(keep)};
}

size_t elements(const py::array& a) { return static_cast<size_t>(a.size()); }

}  // namespace

PYBIND11_MODULE(_chorus, m) {
  m.doc() = "Chorus collectives on NumPy arrays";
  // chorus.Error (a RuntimeError) carries the failed ranks, so that the survivors know
  // whom to leave out: e.failed_ranks (ascending, the failing communicator's numbering;
  // empty when no rank is known to be at fault, e.g. a timeout) and e.code.
  // Leaked on purpose: the translator may run until the interpreter exits.
  static py::object* errorType = new py::exception<chorus::Error>(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const chorus::Error& e) {
      py::object instance = (*errorType)(py::str(e.what()));
      instance.attr("failed_ranks") = py::cast(e.failedRanks());
      instance.attr("code") = py::int_(static_cast<int>(e.code()));
      PyErr_SetObject(errorType->ptr(), instance.ptr());
    }
  });

  py::class_<PyWork>(m, "Work")
      .def("wait", &PyWork::wait, py::arg("timeout") = -1.0,
           "Drives the operation until it completes (True) or `timeout` seconds pass (False); "
           "raises chorus.Error if it failed")
      .def("test", &PyWork::test, "Makes what progress it can; True once complete")
      .def_property_readonly(
          "algorithm", [](const PyWork& w) { return w.work.algorithm(); },
          "The algorithm the engine runs (or ran) for this call, as algorithm_for names it "
          "(\"ring\", \"rd\", \"mailbox\", ...)");

  m.def(
      "get_unique_id",
      [] {
        const chorus::UniqueId id = chorus::getUniqueId();
        return py::bytes(id.bytes.data(), id.bytes.size());
      },
      "Starts the rendezvous store in this process; hand the bytes to every rank");

  py::class_<chorus::Communicator>(m, "Communicator")
      .def(py::init([](int rank, int nranks, py::bytes id, double timeout) {
             const std::string raw = id;
             chorus::UniqueId uid;
             if (raw.size() != uid.bytes.size())
               throw py::value_error("chorus: a unique id is 128 bytes");
             std::memcpy(uid.bytes.data(), raw.data(), raw.size());
             chorus::Options options;
             options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout * 1e3));
             py::gil_scoped_release release;
             return chorus::Communicator::init(rank, nranks, uid, options);
           }),
           py::arg("rank"), py::arg("nranks"), py::arg("unique_id"), py::arg("timeout") = 0.0)
      .def_static(
          "from_env",
          [](double timeout) {
            chorus::Options options;
            options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout * 1e3));
            py::gil_scoped_release release;
            return chorus::Communicator::initFromEnv(options);
          },
          py::arg("timeout") = 0.0,
          "From chorus-run's or torchrun-style variables (RANK, WORLD_SIZE, MASTER_ADDR, ...)")
      .def_property_readonly("rank", &chorus::Communicator::rank)
      .def_property_readonly("size", &chorus::Communicator::size)
      .def_property_readonly("local_rank", &chorus::Communicator::localRank,
                             "This rank's index among the ranks on its node (pick a GPU by it)")
      .def_property_readonly("local_size", &chorus::Communicator::localSize,
                             "How many ranks the node has")
      .def_property_readonly("transport", &chorus::Communicator::transportName)
      .def_property_readonly("failed_ranks", &chorus::Communicator::failedRanks,
                             "The ranks known to have failed (those of the error that failed "
                             "the communicator, as in chorus.Error.failed_ranks); [] while it "
                             "has not failed")
      .def(
          "algorithm_for",
          [](chorus::Communicator& c, const std::string& collective, size_t count,
             const py::object& dtype) {
            return c.algorithmFor(collective, count, typeOf(py::dtype::from_args(dtype)));
          },
          py::arg("collective"), py::arg("count"), py::arg("dtype"),
          "The algorithm a call on ordinary arrays would run now: collective \"allreduce\", "
          "\"allgather\", \"reducescatter\", \"broadcast\", \"reduce\" or \"alltoall\", "
          "count as the call takes it")
      .def(
          "set_algorithm",
          [](chorus::Communicator& c, const std::string& spec) { c.setAlgorithm(spec); },
          py::arg("spec"),
          "Forces algorithms, as CHORUS_ALGO does (\"allreduce:rd\"; \"auto\" to undo); every "
          "rank must set the same")
      .def(
          "all_reduce",
          [](chorus::Communicator& c, py::array send, py::array recv, const std::string& op) {
            checkContiguous(send, "send", false);
            checkContiguous(recv, "recv", true);
            sameType(send, recv);
            if (send.size() != recv.size())
              throw py::value_error("chorus: all_reduce: sizes differ");
            return start(c.allReduce(send.data(), recv.mutable_data(), elements(send), typeOf(send),
                                     opOf(op)),
                         {send, recv});
          },
          py::arg("send"), py::arg("recv"), py::arg("op") = "sum")
      .def(
          "all_gather",
          [](chorus::Communicator& c, py::array send, py::array recv) {
            checkContiguous(send, "send", false);
            checkContiguous(recv, "recv", true);
            sameType(send, recv);
            if (static_cast<size_t>(recv.size()) != elements(send) * c.size())
              throw py::value_error("chorus: all_gather: recv must hold size * send elements");
            return start(
                c.allGather(send.data(), recv.mutable_data(), elements(send), typeOf(send)),
                {send, recv});
          },
          py::arg("send"), py::arg("recv"))
      .def(
          "reduce_scatter",
          [](chorus::Communicator& c, py::array send, py::array recv, const std::string& op) {
            checkContiguous(send, "send", false);
            checkContiguous(recv, "recv", true);
            sameType(send, recv);
            if (static_cast<size_t>(send.size()) != elements(recv) * c.size())
              throw py::value_error("chorus: reduce_scatter: send must hold size * recv elements");
            return start(c.reduceScatter(send.data(), recv.mutable_data(), elements(recv),
                                         typeOf(send), opOf(op)),
                         {send, recv});
          },
          py::arg("send"), py::arg("recv"), py::arg("op") = "sum")
      .def(
          "broadcast",
          [](chorus::Communicator& c, py::array buf, int root) {
            checkContiguous(buf, "buffer", true);
            return start(
                c.broadcast(buf.data(), buf.mutable_data(), elements(buf), typeOf(buf), root),
                {buf});
          },
          py::arg("buffer"), py::arg("root"))
      .def(
          "reduce",
          [](chorus::Communicator& c, py::array send, py::object recv, int root,
             const std::string& op) {
            checkContiguous(send, "send", false);
            void* out = nullptr;
            if (!recv.is_none()) {
              py::array r = recv.cast<py::array>();
              checkContiguous(r, "recv", true);
              sameType(send, r);
              if (r.size() != send.size()) throw py::value_error("chorus: reduce: sizes differ");
              out = r.mutable_data();
            } else if (c.rank() == root) {
              throw py::value_error("chorus: reduce: the root needs a recv array");
            }
            return start(c.reduce(send.data(), out, elements(send), typeOf(send), opOf(op), root),
                         {send, recv});
          },
          py::arg("send"), py::arg("recv"), py::arg("root"), py::arg("op") = "sum")
      .def(
          "all_to_all",
          [](chorus::Communicator& c, py::array send, py::array recv) {
            checkContiguous(send, "send", false);
            checkContiguous(recv, "recv", true);
            sameType(send, recv);
            if (send.size() != recv.size() || send.size() % c.size() != 0)
              throw py::value_error(
                  "chorus: all_to_all: equal sizes, a multiple of the rank count");
            return start(c.allToAll(send.data(), recv.mutable_data(), elements(send) / c.size(),
                                    typeOf(send)),
                         {send, recv});
          },
          py::arg("send"), py::arg("recv"))
      .def(
          "send",
          [](chorus::Communicator& c, py::array buf, int peer) {
            checkContiguous(buf, "buffer", false);
            return start(c.send(buf.data(), elements(buf), typeOf(buf), peer), {buf});
          },
          py::arg("buffer"), py::arg("peer"))
      .def(
          "recv",
          [](chorus::Communicator& c, py::array buf, int peer) {
            checkContiguous(buf, "buffer", true);
            return start(c.recv(buf.mutable_data(), elements(buf), typeOf(buf), peer), {buf});
          },
          py::arg("buffer"), py::arg("peer"))
      .def("abort", &chorus::Communicator::abort)
      .def(
          "close",
          [](chorus::Communicator& c) {
            py::gil_scoped_release release;
            c = chorus::Communicator();  // leaves together with the other ranks
          },
          "Destroys the communicator (collective: every rank calls it)");
}
