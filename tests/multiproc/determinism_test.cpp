// chorus_determinism_test: every rank of an all-reduce gets the same bits, for every
// algorithm, on inputs whose sums are not exact (data-parallel replicas that diverge by
// one rounding drift apart). The other multiprocess tests pick inputs that sum exactly in
// any order, so they cannot see a rank that folds in another order.
//   chorus-run -n N chorus_determinism_test
// Inputs: full-mantissa values of 16 binades in (-1, 1) from a hash of (rank, element). Per
// algorithm (forced), type (float32, float64, bfloat16), count (1023, 100003) and in/out of place:
// every rank's output, all-gathered as bytes, must equal rank 0's byte for byte. The
// algorithms documented to fold in rank order (mailbox, oneshot, peer_oneshot) must also
// equal the left fold ((x0 + x1) + x2) + ... computed here, for float32 and float64.
// Exit 0 only if every check passed; each problem prints a line with FAIL.
#include <chorus/chorus.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using chorus::DataType;
using chorus::RedOp;

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Element i of rank r: `bits` significant bits (24 float, 53 double, 8 bfloat16) scaled
// into one of 16 binades below 1, so that adding two of them rounds (values on one grid
// would sum exactly, in any order).
double input(int rank, size_t i, int bits) {
  const uint64_t h = mix((static_cast<uint64_t>(rank) << 40) ^ i);
  const int64_t m = static_cast<int64_t>(h >> (64 - bits)) - (int64_t{1} << (bits - 1));
  const int binade = static_cast<int>(mix(h) & 15);
  return std::ldexp(static_cast<double>(m), -(bits - 1) - binade);
}

uint16_t bf16Of(float f) {  // truncation: the inputs are exact bfloat16 values
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}

size_t bytesOf(DataType t) { return t == DataType::Float64 ? 8 : t == DataType::Float32 ? 4 : 2; }
const char* nameOf(DataType t) {
  return t == DataType::Float64 ? "float64" : t == DataType::Float32 ? "float32" : "bfloat16";
}

void fill(std::byte* p, DataType t, int rank, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (t == DataType::Float64) {
      const double v = input(rank, i, 53);
      std::memcpy(p + 8 * i, &v, 8);
    } else if (t == DataType::Float32) {
      const float v = static_cast<float>(input(rank, i, 24));
      std::memcpy(p + 4 * i, &v, 4);
    } else {
      const uint16_t v = bf16Of(static_cast<float>(input(rank, i, 8)));
      std::memcpy(p + 2 * i, &v, 2);
    }
  }
}

// ((x0 + x1) + x2) + ... in the type's own arithmetic.
bool leftFoldMatches(const std::byte* out, DataType t, int n, size_t count, std::string& why) {
  for (size_t i = 0; i < count; ++i) {
    bool same;
    if (t == DataType::Float64) {
      double acc = input(0, i, 53), got;
      for (int r = 1; r < n; ++r) acc = acc + input(r, i, 53);
      std::memcpy(&got, out + 8 * i, 8);
      same = std::memcmp(&acc, &got, 8) == 0;
    } else {
      float acc = static_cast<float>(input(0, i, 24)), got;
      for (int r = 1; r < n; ++r) acc = acc + static_cast<float>(input(r, i, 24));
      std::memcpy(&got, out + 4 * i, 4);
      same = std::memcmp(&acc, &got, 4) == 0;
    }
    if (!same) {
      why = "element " + std::to_string(i) + " differs from the left fold in rank order";
      return false;
    }
  }
  return true;
}

struct Case {
  const char* spec;     // setAlgorithm's
  const char* runs;     // Work::algorithm() must say this ("" : whatever the tuner picks)
  const char* buffers;  // "malloc" or "memalloc"
  bool rankOrder;       // documented to fold in rank order 0, 1, ..., n-1
};

}  // namespace

int main() {
  chorus::Communicator comm = chorus::Communicator::initFromEnv();
  const int n = comm.size(), rank = comm.rank();
  const bool shm = comm.transportName() == "shm";
  std::vector<Case> cases = {
      {"allreduce:oneshot", "oneshot", "malloc", true},
      {"allreduce:twoshot", "twoshot", "malloc", false},
      {"allreduce:rd", "rd", "malloc", false},
      {"allreduce:rhd", "rhd", "malloc", false},
      {"allreduce:ring", "ring", "malloc", false},
  };
  if (shm) {
    cases.push_back({"allreduce:peer_oneshot", "peer_oneshot", "memalloc", true});
    cases.push_back({"allreduce:peer_twoshot", "peer_twoshot", "memalloc", false});
    cases.push_back({"allreduce:peer_push", "peer_push", "memalloc", false});
    cases.push_back({"allreduce:peer_ring", "peer_ring", "memalloc", false});
    cases.push_back({"allreduce:peer_staged", "peer_staged", "malloc", false});
  }
  int failures = 0, checks = 0;
  auto fail = [&](const std::string& what) {
    std::printf("rank %d: FAIL: %s\n", rank, what.c_str());
    ++failures;
  };
  auto run = [&](const Case& c, DataType type, size_t count, bool inPlace) {
    const size_t bytes = count * bytesOf(type);
    const bool mem = std::strcmp(c.buffers, "memalloc") == 0;
    std::vector<std::byte> inVec, outVec;
    std::byte *in, *out;
    if (mem) {
      in = static_cast<std::byte*>(chorus::memAlloc(bytes));
      out = inPlace ? in : static_cast<std::byte*>(chorus::memAlloc(bytes));
    } else {
      inVec.resize(bytes);
      outVec.resize(bytes);
      in = inVec.data();
      out = inPlace ? in : outVec.data();
    }
    const std::string what = std::string(c.spec) + " " + nameOf(type) + " x " +
                             std::to_string(count) + (inPlace ? " in place" : " out of place");
    fill(in, type, rank, count);
    chorus::Work w = comm.allReduce(in, out, count, type, RedOp::Sum);
    w.wait();
    const std::string ran = w.algorithm();
    if (*c.runs && ran != c.runs) fail(what + ": ran " + ran);
    std::vector<std::byte> mine(out, out + bytes), all(bytes * static_cast<size_t>(n));
    comm.allGather(mine.data(), all.data(), bytes, DataType::Uint8).wait();
    for (int k = 1; k < n; ++k) {
      if (std::memcmp(all.data(), all.data() + bytes * static_cast<size_t>(k), bytes) == 0)
        continue;
      size_t first = 0;
      while (all[first] == all[bytes * static_cast<size_t>(k) + first]) ++first;
      fail(what + " (" + ran + "): rank " + std::to_string(k) + "'s result differs from rank 0's" +
           " at byte " + std::to_string(first) + " (element " +
           std::to_string(first / bytesOf(type)) + ")");
      break;
    }
    std::string why;
    if (c.rankOrder && type != DataType::Bfloat16 && !leftFoldMatches(out, type, n, count, why))
      fail(what + " (" + ran + "): " + why);
    ++checks;
    if (mem) {
      chorus::memFree(in);
      if (!inPlace) chorus::memFree(out);
    }
  };
  try {
    for (const Case& c : cases) {
      comm.setAlgorithm(c.spec);
      for (DataType type : {DataType::Float32, DataType::Float64, DataType::Bfloat16})
        for (size_t count : {size_t{1023}, size_t{100003}})
          for (bool inPlace : {false, true}) run(c, type, count, inPlace);
    }
    // The library's own choice: small all-reduces go through the shm mailbox, which folds
    // in rank order too.
    comm.setAlgorithm("allreduce:auto");
    for (DataType type : {DataType::Float32, DataType::Float64}) {
      const Case mailbox{"allreduce:auto", shm && n > 1 ? "mailbox" : "", "malloc", shm && n > 1};
      run(mailbox, type, 31, false);
      run(mailbox, type, 31, true);
      run(Case{"allreduce:auto", "", "malloc", false}, type, 100003, false);
    }
  } catch (const std::exception& e) {
    fail(std::string("threw: ") + e.what());
  }
  if (failures == 0 && rank == 0)
    std::printf("determinism: %d all-reduces on %d ranks (%s), every rank the same bits\n", checks,
                n, comm.transportName().c_str());
  return failures ? 1 : 0;
}
