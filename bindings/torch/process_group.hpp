// torch.distributed backend "chorus": a c10d::ProcessGroup whose collectives run on a
// Chorus communicator created on the c10d::Store that init_process_group set up.
#pragma once

#include "work.hpp"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace chorus::torchpg {

class ProcessGroupChorus : public c10d::ProcessGroup {
 public:
  // Collective over the group; `timeout` becomes the communicator's limit on how long
  // any wait may go without progress (Chorus's deadline, CHORUS_TIMEOUT otherwise).
  ProcessGroupChorus(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                     std::chrono::milliseconds timeout);
  ~ProcessGroupChorus() override;

  const std::string getBackendName() const override { return "chorus"; }
  std::string transportName();
  // The ranks known to have failed once a collective raised (Chorus's Error::failedRanks).
  std::vector<int> failedRanks() { return driver_->failedRanks(); }
  // The algorithm a call of `collective` ("allreduce", "allgather", "reducescatter",
  // "broadcast", "reduce", "alltoall") on `tensor` would run now (Communicator::algorithmFor),
  // and the override of the choice (Communicator::setAlgorithm, CHORUS_ALGO's syntax).
  std::string algorithmFor(const std::string& collective, const at::Tensor& tensor);
  void setAlgorithm(const std::string& spec) { driver_->setAlgorithm(spec); }

  using Tensors = std::vector<at::Tensor>;
  using TensorLists = std::vector<std::vector<at::Tensor>>;
  c10::intrusive_ptr<c10d::Work> broadcast(Tensors& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(Tensors& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      Tensors& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(Tensors& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(TensorLists& outputs, Tensors& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(TensorLists& outputs, Tensors& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(TensorLists& outputs, Tensors& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(Tensors& outputs, TensorLists& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(Tensors& outputs, TensorLists& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits,
                                               std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(Tensors& outputs, Tensors& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(Tensors& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(Tensors& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(Tensors& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

 private:
  using Submit = std::function<void(detail::CommImpl&, ChorusWork&)>;
  c10::intrusive_ptr<c10d::Work> issue(c10d::OpType type, Tensors outputs, const Submit& submit);

  std::chrono::milliseconds timeout_;
  std::shared_ptr<Driver> driver_;
};

}  // namespace chorus::torchpg
