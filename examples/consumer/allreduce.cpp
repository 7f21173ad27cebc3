// Smallest Chorus program: every rank contributes rank+1; all receive n(n+1)/2.
// Run: chorus-run -n 4 ./allreduce_cpp
#include <chorus/chorus.hpp>

#include <cstdio>
#include <vector>

int main() {
  try {
    auto comm = chorus::Communicator::initFromEnv();
    std::vector<float> data(1000, static_cast<float>(comm.rank() + 1));
    comm.allReduce(data.data(), data.data(), data.size(), chorus::DataType::Float32,
                   chorus::RedOp::Sum)
        .wait();
    const int n = comm.size();
    for (float v : data) {
      if (v != n * (n + 1) / 2.0f) {
        std::fprintf(stderr, "rank %d: wrong value %g\n", comm.rank(), v);
        return 1;
      }
    }
    std::printf("rank %d/%d: ok (%s)\n", comm.rank(), n, comm.transportName().c_str());
  } catch (const chorus::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
