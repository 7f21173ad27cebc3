// The collectives of the "chorus" torch.distributed backend. Each turns its tensors into
// contiguous host buffers (a copy when a tensor is not contiguous, copied back when the
// operation completes) and submits one or more Chorus operations.
#include "process_group.hpp"

#include "store_adapter.hpp"

#include <algorithm>
#include <numeric>

namespace chorus::torchpg {
namespace {

using detail::CommImpl;
using Call = CommImpl::Call;

DataType chorusType(const at::Tensor& t, const char* what) {
  switch (t.scalar_type()) {
    case at::kChar:
      return DataType::Int8;
    case at::kByte:
      return DataType::Uint8;
    case at::kInt:
      return DataType::Int32;
    case at::kLong:
      return DataType::Int64;
    case at::kHalf:
      return DataType::Float16;
    case at::kFloat:
      return DataType::Float32;
    case at::kDouble:
      return DataType::Float64;
    case at::kBFloat16:
      return DataType::Bfloat16;
    default:
      break;
  }
  TORCH_CHECK(false, "chorus: ", what, ": no Chorus data type for ", t.scalar_type(),
              " (supported: int8, uint8, int32, int64, float16, bfloat16, float32, float64)");
}

RedOp chorusOp(const c10d::ReduceOp& op, const char* what) {
  switch (static_cast<c10d::ReduceOp::RedOpType>(op)) {
    case c10d::ReduceOp::SUM:
      return RedOp::Sum;
    case c10d::ReduceOp::AVG:
      return RedOp::Avg;
    case c10d::ReduceOp::PRODUCT:
      return RedOp::Prod;
    case c10d::ReduceOp::MIN:
      return RedOp::Min;
    case c10d::ReduceOp::MAX:
      return RedOp::Max;
    case c10d::ReduceOp::BAND:
      TORCH_CHECK(
          false, "chorus: ", what,
          ": ReduceOp.BAND is not supported (Chorus reduces with SUM, PRODUCT, MIN, MAX, AVG)");
    case c10d::ReduceOp::BOR:
      TORCH_CHECK(
          false, "chorus: ", what,
          ": ReduceOp.BOR is not supported (Chorus reduces with SUM, PRODUCT, MIN, MAX, AVG)");
    case c10d::ReduceOp::BXOR:
      TORCH_CHECK(
          false, "chorus: ", what,
          ": ReduceOp.BXOR is not supported (Chorus reduces with SUM, PRODUCT, MIN, MAX, AVG)");
    case c10d::ReduceOp::PREMUL_SUM:
      TORCH_CHECK(false, "chorus: ", what,
                  ": ReduceOp.PREMUL_SUM is not supported (Chorus reduces with SUM, PRODUCT, MIN, "
                  "MAX, AVG)");
    default:
      break;
  }
  TORCH_CHECK(false, "chorus: ", what, ": unknown ReduceOp ",
              static_cast<int>(static_cast<c10d::ReduceOp::RedOpType>(op)));
}

void checkTensor(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.defined(), "chorus: ", what, ": undefined tensor");
  TORCH_CHECK(t.device().is_cpu(), "chorus: ", what, ": only CPU tensors are supported (got ",
              t.device(), ")");
  TORCH_CHECK(!t.is_sparse(), "chorus: ", what, ": sparse tensors are not supported");
}

at::Tensor& single(std::vector<at::Tensor>& tensors, const char* what) {
  TORCH_CHECK(tensors.size() == 1, "chorus: ", what, ": expects one tensor per call, got ",
              tensors.size());
  checkTensor(tensors[0], what);
  return tensors[0];
}

void checkSameType(const at::Tensor& a, const at::Tensor& b, const char* what) {
  checkTensor(b, what);
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "chorus: ", what,
              ": tensors of different types (", a.scalar_type(), " and ", b.scalar_type(), ")");
}

void checkRank(int64_t r, int size, const char* what) {
  TORCH_CHECK(r >= 0 && r < size, "chorus: ", what, ": rank ", r, " out of range [0, ", size, ")");
}

void addFinalize(ChorusWork& work, std::function<void()> step) {
  if (!work.finalize) {
    work.finalize = std::move(step);
    return;
  }
  work.finalize = [first = std::move(work.finalize), then = std::move(step)] {
    first();
    then();
  };
}

// A contiguous buffer the engine may read: the tensor itself, or a contiguous copy.
at::Tensor readable(ChorusWork& work, const at::Tensor& t) {
  at::Tensor buf = t.is_contiguous() ? t : t.contiguous();
  work.keepAlive.push_back(buf);
  return buf;
}

// A contiguous buffer the engine may write (holding t's values, for in-place ops);
// copied back into t when the work completes if it is a copy.
at::Tensor writable(ChorusWork& work, const at::Tensor& t) {
  work.keepAlive.push_back(t);
  if (t.is_contiguous()) return t;
  at::Tensor buf = t.contiguous();
  work.keepAlive.push_back(buf);
  addFinalize(work, [t, buf]() mutable { t.copy_(buf); });
  return buf;
}

// One flat contiguous tensor holding `tensors` one after another (a copy).
at::Tensor flatten(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const auto& t : tensors) flat.push_back(t.reshape(-1));
  return at::cat(flat);
}

// Copies consecutive pieces of `flat` back into `tensors` when the work completes.
void unflattenLater(ChorusWork& work, at::Tensor flat, std::vector<at::Tensor> tensors,
                    int64_t stride = -1) {
  addFinalize(work, [flat, tensors, stride]() mutable {
    int64_t offset = 0;
    for (auto& t : tensors) {
      t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += stride >= 0 ? stride : t.numel();
    }
  });
}

std::byte* bytes(const at::Tensor& t) { return static_cast<std::byte*>(t.data_ptr()); }

// All-to-all with per-peer element counts and offsets: one Chorus all-to-all when every
// rank is known to cut equal parts (`equalEverywhere`: no rank gave split sizes), else a
// send and a receive per peer (and a local copy for itself). Equal counts on this rank
// alone do not do: a peer with uneven ones sends and receives instead, and the two kinds
// of call do not match.
void allToAllV(CommImpl& comm, ChorusWork& work, const at::Tensor& in,
               const std::vector<int64_t>& inCounts, const std::vector<int64_t>& inOffsets,
               const at::Tensor& out, const std::vector<int64_t>& outCounts,
               const std::vector<int64_t>& outOffsets, DataType type, bool equalEverywhere) {
  const int n = comm.size(), me = comm.rank();
  const size_t es = sizeOf(type);
  if (equalEverywhere) {
    work.pieces.push_back(comm.submit({Collective::AllToAll, bytes(in), bytes(out),
                                       static_cast<size_t>(inCounts[0]), type, RedOp::Sum, 0}));
    return;
  }
  TORCH_CHECK(inCounts[me] == outCounts[me], "chorus: alltoall: this rank sends itself ",
              inCounts[me], " elements but expects ", outCounts[me]);
  std::memcpy(bytes(out) + outOffsets[me] * es, bytes(in) + inOffsets[me] * es, inCounts[me] * es);
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    if (inCounts[p] > 0)
      work.pieces.push_back(comm.submit({Collective::Send, bytes(in) + inOffsets[p] * es, nullptr,
                                         static_cast<size_t>(inCounts[p]), type, RedOp::Sum, p}));
    if (outCounts[p] > 0)
      work.pieces.push_back(comm.submit({Collective::Recv, nullptr, bytes(out) + outOffsets[p] * es,
                                         static_cast<size_t>(outCounts[p]), type, RedOp::Sum, p}));
  }
}

std::vector<int64_t> offsetsOf(const std::vector<int64_t>& counts) {
  std::vector<int64_t> offsets(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) offsets[i] = offsets[i - 1] + counts[i - 1];
  return offsets;
}

size_t count(const at::Tensor& t) { return static_cast<size_t>(t.numel()); }

}  // namespace

ProcessGroupChorus::ProcessGroupChorus(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                       int size, std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size), timeout_(timeout) {
  chorus::Options options;
  options.timeout = timeout;
  driver_ = std::make_shared<Driver>(
      CommImpl::createOnStore(rank, size, std::make_shared<C10dStore>(store), options));
  init();
}

ProcessGroupChorus::~ProcessGroupChorus() {
  driver_->shutdown(Clock::now() + std::min<Clock::duration>(timeout_, std::chrono::seconds(60)));
}

std::string ProcessGroupChorus::transportName() { return driver_->comm().transportName(); }

std::string ProcessGroupChorus::algorithmFor(const std::string& collective,
                                             const at::Tensor& tensor) {
  const DataType type = chorusType(tensor, "algorithm_for");
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                       Collective::Broadcast, Collective::Reduce, Collective::AllToAll}) {
    std::string name = toString(c);
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    if (name == collective) return driver_->algorithmFor(c, count(tensor), type);
  }
  TORCH_CHECK(false, "chorus: algorithm_for: unknown collective '", collective,
              "' (allreduce, allgather, reducescatter, broadcast, reduce, alltoall)");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::issue(c10d::OpType type, Tensors outputs,
                                                         const Submit& submit) {
  auto work = c10::make_intrusive<ChorusWork>(driver_, rank_, type, std::move(outputs));
  driver_->enqueue(work, [&](CommImpl& comm) { submit(comm, *work); });
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::broadcast(Tensors& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  at::Tensor& t = single(tensors, "broadcast");
  const DataType type = chorusType(t, "broadcast");
  checkRank(opts.rootRank, size_, "broadcast root");
  return issue(c10d::OpType::BROADCAST, tensors, [&](CommImpl& comm, ChorusWork& work) {
    at::Tensor buf = writable(work, t);
    work.pieces.push_back(
        comm.submit({Collective::Broadcast, buf.data_ptr(), buf.data_ptr(), count(buf), type,
                     RedOp::Sum, static_cast<int>(opts.rootRank)}));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::allreduce(Tensors& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  at::Tensor& t = single(tensors, "allreduce");
  const DataType type = chorusType(t, "allreduce");
  const RedOp op = chorusOp(opts.reduceOp, "allreduce");
  return issue(c10d::OpType::ALLREDUCE, tensors, [&](CommImpl& comm, ChorusWork& work) {
    at::Tensor buf = writable(work, t);
    work.pieces.push_back(comm.submit(
        {Collective::AllReduce, buf.data_ptr(), buf.data_ptr(), count(buf), type, op, 0}));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::allreduce_coalesced(
    Tensors& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "chorus: allreduce_coalesced: no tensors");
  for (auto& t : tensors) checkSameType(tensors[0], t, "allreduce_coalesced");
  const DataType type = chorusType(tensors[0], "allreduce_coalesced");
  const RedOp op = chorusOp(opts.reduceOp, "allreduce_coalesced");
  at::Tensor flat = flatten(tensors);
  return issue(c10d::OpType::ALLREDUCE_COALESCED, tensors, [&](CommImpl& comm, ChorusWork& work) {
    work.keepAlive.push_back(flat);
    work.pieces.push_back(comm.submit(
        {Collective::AllReduce, flat.data_ptr(), flat.data_ptr(), count(flat), type, op, 0}));
    unflattenLater(work, flat, tensors);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::reduce(Tensors& tensors,
                                                          const c10d::ReduceOptions& opts) {
  at::Tensor& t = single(tensors, "reduce");
  const DataType type = chorusType(t, "reduce");
  const RedOp op = chorusOp(opts.reduceOp, "reduce");
  checkRank(opts.rootRank, size_, "reduce root");
  const int root = static_cast<int>(opts.rootRank);
  return issue(c10d::OpType::REDUCE, tensors, [&](CommImpl& comm, ChorusWork& work) {
    // Only the root's tensor changes.
    at::Tensor buf = root == rank_ ? writable(work, t) : readable(work, t);
    work.pieces.push_back(
        comm.submit({Collective::Reduce, buf.data_ptr(), root == rank_ ? buf.data_ptr() : nullptr,
                     count(buf), type, op, root}));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::allgather(TensorLists& outputs, Tensors& inputs,
                                                             const c10d::AllgatherOptions&) {
  at::Tensor& in = single(inputs, "allgather");
  const DataType type = chorusType(in, "allgather");
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
              "chorus: allgather: expects one list of ", size_, " output tensors");
  std::vector<at::Tensor>& outs = outputs[0];
  int64_t most = 0;
  for (auto& o : outs) {
    checkSameType(in, o, "allgather");
    most = std::max(most, o.numel());
  }
  TORCH_CHECK(outs[rank_].numel() == in.numel(), "chorus: allgather: this rank's output has ",
              outs[rank_].numel(), " elements, its input ", in.numel());
  // Uneven sizes travel padded to the largest (every rank knows every size).
  at::Tensor send = in.numel() == most
                        ? in.reshape(-1).contiguous()
                        : at::constant_pad_nd(in.reshape(-1), {0, most - in.numel()});
  at::Tensor flat = at::empty({most * size_}, in.options());
  return issue(c10d::OpType::ALLGATHER, outs, [&](CommImpl& comm, ChorusWork& work) {
    work.keepAlive = {send, flat};
    work.pieces.push_back(comm.submit({Collective::AllGather, send.data_ptr(), flat.data_ptr(),
                                       static_cast<size_t>(most), type, RedOp::Sum, 0}));
    unflattenLater(work, flat, outs, most);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::_allgather_base(at::Tensor& output,
                                                                   at::Tensor& input,
                                                                   const c10d::AllgatherOptions&) {
  checkTensor(input, "all_gather_into_tensor");
  checkSameType(input, output, "all_gather_into_tensor");
  const DataType type = chorusType(input, "all_gather_into_tensor");
  TORCH_CHECK(output.numel() == input.numel() * size_,
              "chorus: all_gather_into_tensor: output has ", output.numel(), " elements, expected ",
              input.numel() * size_);
  return issue(c10d::OpType::_ALLGATHER_BASE, {output}, [&](CommImpl& comm, ChorusWork& work) {
    at::Tensor in = readable(work, input), out = writable(work, output);
    work.pieces.push_back(comm.submit(
        {Collective::AllGather, in.data_ptr(), out.data_ptr(), count(in), type, RedOp::Sum, 0}));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::allgather_coalesced(
    TensorLists& outputs, Tensors& inputs, const c10d::AllgatherOptions&) {
  TORCH_CHECK(!inputs.empty(), "chorus: allgather_coalesced: no tensors");
  TORCH_CHECK(static_cast<int>(outputs.size()) == size_, "chorus: allgather_coalesced: expects ",
              size_, " output lists");
  for (auto& t : inputs) checkSameType(inputs[0], t, "allgather_coalesced");
  const DataType type = chorusType(inputs[0], "allgather_coalesced");
  at::Tensor send = flatten(inputs);
  at::Tensor flat = at::empty({send.numel() * size_}, send.options());
  std::vector<at::Tensor> outs;  // rank-major, the order the flat buffer holds them
  for (auto& list : outputs) {
    TORCH_CHECK(list.size() == inputs.size(), "chorus: allgather_coalesced: output list of ",
                list.size(), " tensors for ", inputs.size(), " inputs");
    for (size_t i = 0; i < list.size(); ++i) {
      checkSameType(inputs[0], list[i], "allgather_coalesced");
      TORCH_CHECK(list[i].numel() == inputs[i].numel(),
                  "chorus: allgather_coalesced: output and input sizes differ");
      outs.push_back(list[i]);
    }
  }
  return issue(c10d::OpType::ALLGATHER_COALESCED, outs, [&](CommImpl& comm, ChorusWork& work) {
    work.keepAlive = {send, flat};
    work.pieces.push_back(comm.submit({Collective::AllGather, send.data_ptr(), flat.data_ptr(),
                                       count(send), type, RedOp::Sum, 0}));
    unflattenLater(work, flat, outs);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::gather(TensorLists& outputs, Tensors& inputs,
                                                          const c10d::GatherOptions& opts) {
  at::Tensor& in = single(inputs, "gather");
  const DataType type = chorusType(in, "gather");
  checkRank(opts.rootRank, size_, "gather root");
  const int root = static_cast<int>(opts.rootRank);
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_,
                "chorus: gather: the root expects one list of ", size_, " output tensors");
    for (auto& o : outputs[0]) {
      checkSameType(in, o, "gather");
      TORCH_CHECK(o.numel() == in.numel(), "chorus: gather: output sizes differ from the input's");
    }
  } else {
    TORCH_CHECK(outputs.empty() || outputs[0].empty(),
                "chorus: gather: only the root passes output tensors");
  }
  Tensors outs = rank_ == root ? outputs[0] : Tensors{};
  return issue(c10d::OpType::GATHER, outs, [&](CommImpl& comm, ChorusWork& work) {
    at::Tensor send = readable(work, in);
    if (rank_ != root) {
      work.pieces.push_back(comm.submit(
          {Collective::Send, send.data_ptr(), nullptr, count(send), type, RedOp::Sum, root}));
      return;
    }
    for (int r = 0; r < size_; ++r) {
      at::Tensor out = writable(work, outs[r]);
      if (r == rank_)
        out.view(-1).copy_(send.view(-1));
      else
        work.pieces.push_back(comm.submit(
            {Collective::Recv, nullptr, out.data_ptr(), count(out), type, RedOp::Sum, r}));
    }
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::scatter(Tensors& outputs, TensorLists& inputs,
                                                           const c10d::ScatterOptions& opts) {
  at::Tensor& out = single(outputs, "scatter");
  const DataType type = chorusType(out, "scatter");
  checkRank(opts.rootRank, size_, "scatter root");
  const int root = static_cast<int>(opts.rootRank);
  if (rank_ == root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
                "chorus: scatter: the root expects one list of ", size_, " input tensors");
    for (auto& i : inputs[0]) {
      checkSameType(out, i, "scatter");
      TORCH_CHECK(i.numel() == out.numel(),
                  "chorus: scatter: input sizes differ from the output's");
    }
  } else {
    TORCH_CHECK(inputs.empty() || inputs[0].empty(),
                "chorus: scatter: only the root passes input tensors");
  }
  Tensors ins = rank_ == root ? inputs[0] : Tensors{};
  return issue(c10d::OpType::SCATTER, outputs, [&](CommImpl& comm, ChorusWork& work) {
    at::Tensor recv = writable(work, out);
    if (rank_ != root) {
      work.pieces.push_back(comm.submit(
          {Collective::Recv, nullptr, recv.data_ptr(), count(recv), type, RedOp::Sum, root}));
      return;
    }
    for (int r = 0; r < size_; ++r) {
      at::Tensor send = readable(work, ins[r]);
      if (r == rank_)
        recv.view(-1).copy_(send.view(-1));
      else
        work.pieces.push_back(comm.submit(
            {Collective::Send, send.data_ptr(), nullptr, count(send), type, RedOp::Sum, r}));
    }
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::reduce_scatter(
    Tensors& outputs, TensorLists& inputs, const c10d::ReduceScatterOptions& opts) {
  at::Tensor& out = single(outputs, "reduce_scatter");
  const DataType type = chorusType(out, "reduce_scatter");
  const RedOp op = chorusOp(opts.reduceOp, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_,
              "chorus: reduce_scatter: expects one list of ", size_, " input tensors");
  for (auto& i : inputs[0]) {
    checkSameType(out, i, "reduce_scatter");
    TORCH_CHECK(i.numel() == out.numel(),
                "chorus: reduce_scatter: every input must have the "
                "output's number of elements (",
                out.numel(), "), one has ", i.numel());
  }
  at::Tensor flat = flatten(inputs[0]);
  return issue(c10d::OpType::REDUCE_SCATTER, outputs, [&](CommImpl& comm, ChorusWork& work) {
    work.keepAlive.push_back(flat);
    at::Tensor recv = writable(work, out);
    work.pieces.push_back(comm.submit(
        {Collective::ReduceScatter, flat.data_ptr(), recv.data_ptr(), count(recv), type, op, 0}));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  checkTensor(output, "reduce_scatter_tensor");
  checkSameType(output, input, "reduce_scatter_tensor");
  const DataType type = chorusType(output, "reduce_scatter_tensor");
  const RedOp op = chorusOp(opts.reduceOp, "reduce_scatter_tensor");
  TORCH_CHECK(input.numel() == output.numel() * size_, "chorus: reduce_scatter_tensor: input has ",
              input.numel(), " elements, expected ", output.numel() * size_);
  return issue(c10d::OpType::_REDUCE_SCATTER_BASE, {output}, [&](CommImpl& comm, ChorusWork& work) {
    at::Tensor in = readable(work, input), out = writable(work, output);
    work.pieces.push_back(comm.submit(
        {Collective::ReduceScatter, in.data_ptr(), out.data_ptr(), count(out), type, op, 0}));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::alltoall_base(at::Tensor& output,
                                                                 at::Tensor& input,
                                                                 std::vector<int64_t>& outputSplits,
                                                                 std::vector<int64_t>& inputSplits,
                                                                 const c10d::AllToAllOptions&) {
  checkTensor(input, "all_to_all_single");
  checkSameType(input, output, "all_to_all_single");
  const DataType type = chorusType(input, "all_to_all_single");
  // Splits count rows (the first dimension); none given: equal parts.
  auto counts = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* which) {
    std::vector<int64_t> c(size_);
    if (splits.empty()) {
      TORCH_CHECK(t.numel() % size_ == 0, "chorus: all_to_all_single: ", which, " of ", t.numel(),
                  " elements does not split into ", size_, " equal parts");
      std::fill(c.begin(), c.end(), t.numel() / size_);
      return c;
    }
    TORCH_CHECK(static_cast<int>(splits.size()) == size_, "chorus: all_to_all_single: ", which,
                " split sizes name ", splits.size(), " ranks, not ", size_);
    const int64_t row = t.dim() == 0 || t.size(0) == 0 ? 0 : t.numel() / t.size(0);
    TORCH_CHECK(
        std::accumulate(splits.begin(), splits.end(), int64_t{0}) == (t.dim() ? t.size(0) : 1),
        "chorus: all_to_all_single: ", which, " split sizes do not add up to its first dimension");
    for (int p = 0; p < size_; ++p) c[p] = splits[p] * row;
    return c;
  };
  const auto inCounts = counts(input, inputSplits, "input");
  const auto outCounts = counts(output, outputSplits, "output");
  return issue(c10d::OpType::ALLTOALL_BASE, {output}, [&](CommImpl& comm, ChorusWork& work) {
    at::Tensor in = readable(work, input), out = writable(work, output);
    allToAllV(comm, work, in, inCounts, offsetsOf(inCounts), out, outCounts, offsetsOf(outCounts),
              type, inputSplits.empty() && outputSplits.empty());
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::alltoall(Tensors& outputs, Tensors& inputs,
                                                            const c10d::AllToAllOptions&) {
  TORCH_CHECK(static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_,
              "chorus: all_to_all: expects ", size_, " input and ", size_, " output tensors");
  checkTensor(inputs[0], "all_to_all");
  for (auto& t : inputs) checkSameType(inputs[0], t, "all_to_all");
  for (auto& t : outputs) checkSameType(inputs[0], t, "all_to_all");
  const DataType type = chorusType(inputs[0], "all_to_all");
  std::vector<int64_t> inCounts, outCounts;
  for (auto& t : inputs) inCounts.push_back(t.numel());
  for (auto& t : outputs) outCounts.push_back(t.numel());
  at::Tensor send = flatten(inputs);
  at::Tensor flat =
      at::empty({std::accumulate(outCounts.begin(), outCounts.end(), int64_t{0})}, send.options());
  return issue(c10d::OpType::ALLTOALL, outputs, [&](CommImpl& comm, ChorusWork& work) {
    work.keepAlive = {send, flat};
    allToAllV(comm, work, send, inCounts, offsetsOf(inCounts), flat, outCounts,
              offsetsOf(outCounts), type, /*equalEverywhere=*/false);
    unflattenLater(work, flat, outputs);
  });
}

// Tags are not matched: messages between two ranks arrive in the order they were sent.
c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::send(Tensors& tensors, int dstRank, int) {
  at::Tensor& t = single(tensors, "send");
  const DataType type = chorusType(t, "send");
  checkRank(dstRank, size_, "send peer");
  return issue(c10d::OpType::SEND, {}, [&](CommImpl& comm, ChorusWork& work) {
    at::Tensor buf = readable(work, t);
    work.pieces.push_back(comm.submit(
        {Collective::Send, buf.data_ptr(), nullptr, count(buf), type, RedOp::Sum, dstRank}));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::recv(Tensors& tensors, int srcRank, int) {
  at::Tensor& t = single(tensors, "recv");
  const DataType type = chorusType(t, "recv");
  checkRank(srcRank, size_, "recv peer");
  return issue(c10d::OpType::RECV, tensors, [&](CommImpl& comm, ChorusWork& work) {
    at::Tensor buf = writable(work, t);
    work.pieces.push_back(comm.submit(
        {Collective::Recv, nullptr, buf.data_ptr(), count(buf), type, RedOp::Sum, srcRank}));
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::recvAnysource(Tensors&, int) {
  TORCH_CHECK(false, "chorus: recv from any source is not supported: name the source rank");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::barrier(const c10d::BarrierOptions&) {
  // A one-byte all-reduce: no rank leaves before every rank has arrived.
  at::Tensor token = at::zeros({1}, at::kByte);
  return issue(c10d::OpType::BARRIER, {}, [&](CommImpl& comm, ChorusWork& work) {
    work.keepAlive.push_back(token);
    work.pieces.push_back(comm.submit({Collective::AllReduce, token.data_ptr(), token.data_ptr(), 1,
                                       DataType::Uint8, RedOp::Max, 0}));
  });
}

}  // namespace chorus::torchpg
