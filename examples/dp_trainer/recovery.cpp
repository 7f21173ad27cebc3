#include "recovery.hpp"

namespace trainer {

int64_t shrinkAndResync(CommThread& comm, const std::vector<int>& dead, int64_t stepsDone,
                        std::span<float> params, std::span<float> optimizer, Sampler& sampler) {
  comm.shrink(dead);
  return resync(comm, stepsDone, params, optimizer, sampler, {});
}

int64_t resync(CommThread& comm, int64_t stepsDone, std::span<float> params,
               std::span<float> optimizer, Sampler& sampler, std::span<double> shared) {
  double least = static_cast<double>(stepsDone);
  comm.allReduce(&least, 1, chorus::RedOp::Min);
  double root = least == static_cast<double>(stepsDone) ? comm.rank() : 1e9;
  comm.allReduce(&root, 1, chorus::RedOp::Min);
  Sampler::State s = sampler.state();
  uint64_t header[3] = {s.rng, s.epoch, s.cursor};
  const int from = static_cast<int>(root);
  comm.run([&](chorus::Communicator& c) {
    using chorus::DataType;
    chorus::Work w[4] = {
        c.broadcast(params.data(), params.data(), params.size(), DataType::Float32, from),
        c.broadcast(optimizer.data(), optimizer.data(), optimizer.size(), DataType::Float32, from),
        c.broadcast(header, header, 3, DataType::Uint64, from),
        c.broadcast(s.order.data(), s.order.data(), s.order.size(), DataType::Uint32, from)};
    for (chorus::Work& x : w) comm.await(x, "broadcast of the training state");
    if (shared.empty()) return;
    chorus::Work x =
        c.broadcast(shared.data(), shared.data(), shared.size(), DataType::Float64, from);
    comm.await(x, "broadcast of the job's settings");
  });
  s.rng = header[0], s.epoch = header[1], s.cursor = header[2];
  sampler.restore(std::move(s));
  return static_cast<int64_t>(least);
}

}  // namespace trainer
