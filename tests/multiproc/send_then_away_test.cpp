// chorus_send_then_away_test: rank 0 sends 8 MiB to rank 1 and, once its send has
// completed, stays away from the library for 5 s (as a trainer computing would). Rank 1
// must still receive everything well before that: a transport whose bytes move only while
// the sender calls in (UCX without its progress thread) fails here.
//   chorus-run -n 2 --timeout 60 chorus_send_then_away_test --transport ucx
#include <chorus/chorus.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  chorus::Options opt;
  opt.timeout = std::chrono::seconds(30);
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--transport") == 0) opt.transport = argv[i + 1];
  }
  constexpr size_t kCount = size_t{2} << 20;  // floats: 8 MiB
  constexpr auto kAway = std::chrono::seconds(5);
  constexpr double kLimitS = 2.5;  // half the time away: 8 MiB takes well under 0.1 s here
  try {
    auto comm = chorus::Communicator::initFromEnv(opt);
    if (comm.size() != 2) {
      std::printf("FAIL: run with 2 ranks\n");
      return 1;
    }
    std::vector<float> buf(kCount);
    if (comm.rank() == 0) {
      for (size_t i = 0; i < kCount; ++i) buf[i] = static_cast<float>(i % 1000);
      comm.send(buf.data(), kCount, chorus::DataType::Float32, 1).wait();
      std::this_thread::sleep_for(kAway);
      std::printf("rank 0: sent, then away for 5 s\n");
      return 0;
    }
    const auto start = std::chrono::steady_clock::now();
    comm.recv(buf.data(), kCount, chorus::DataType::Float32, 0).wait();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (size_t i = 0; i < kCount; ++i) {
      if (buf[i] != static_cast<float>(i % 1000)) {
        std::printf("FAIL rank 1: element %zu is %g\n", i, static_cast<double>(buf[i]));
        return 1;
      }
    }
    std::printf("rank 1: received 8 MiB over %s in %.3f s (limit %.1f s)\n",
                comm.transportName().c_str(), s, kLimitS);
    if (s > kLimitS) {
      std::printf("FAIL rank 1: the data waited for the sender to come back\n");
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
