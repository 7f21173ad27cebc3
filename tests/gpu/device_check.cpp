// The device interface's conformance test (src/device/device.hpp), for the host
// implementation (every machine) and the CUDA one (exit 77, skipped, without a GPU):
//   device_check host|cuda
// 1. copy in, reduce every type x op (out of place and in place) against the CPU kernels
//    on host copies, bit for bit (NaN payloads aside), copy out; every wait under a deadline
// 2. one-sided across processes: a child process imports a range of the parent's buffer
//    (exportMemory/importMemory: memfd or CUDA IPC), checks what the parent wrote there,
//    adds its own values into it in place, and exits; the parent finds the sums in that
//    range and nothing changed outside it
// 3. bad input: a pointer the device did not allocate, a malformed handle
// Fixed seed.
#include "device/device.hpp"
#include "kernels/reduce.hpp"
#include "tests/gpu/bit_compare.hpp"
#ifdef CHORUS_DEVICE_CHECK_CUDA
#include "device/cuda_device.hpp"
#endif

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chorus/chorus.hpp>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

using namespace chorus;

namespace {

constexpr size_t kCount = (1 << 16) + 3;
constexpr size_t kIpcFloats = 1 << 20, kIpcOffset = 64, kIpcRange = 1000003;
const auto kWait = std::chrono::seconds(30);

std::unique_ptr<device::Device> open(const std::string& kind) {
  if (kind == "host") return device::makeHostDevice();
#ifdef CHORUS_DEVICE_CHECK_CUDA
  if (kind == "cuda") return device::makeCudaDevice(0);
#endif
  throw std::runtime_error("unknown device kind " + kind);
}

int fail(const std::string& what) {
  std::printf("device_check: FAIL: %s\n", what.c_str());
  return 1;
}

// Waits for the device's work so far, under the deadline.
bool settle(device::Device& d) { return d.wait(d.record(), deadlineIn(kWait)); }

int reductions(device::Device& d) {
  const RedOp ops[] = {RedOp::Sum, RedOp::Prod, RedOp::Max, RedOp::Min, RedOp::Avg};
  std::mt19937_64 rng(20261204);
  void* da = d.allocate(kCount * 8);
  void* db = d.allocate(kCount * 8);
  void* dd = d.allocate(kCount * 8);
  int bad = 0, cases = 0;
  for (const chorus_test::TypeInfo& type : chorus_test::kTypes) {
    const DataType t = type.type;
    const size_t bytes = kCount * type.size;
    std::vector<uint8_t> a(bytes), b(bytes), want(bytes), got(bytes);
    for (auto* v : {&a, &b})
      for (auto& x : *v) x = uint8_t(rng());
    for (size_t i = 0; i < bytes; i += 89) b[i] = a[i];  // ties for Max/Min
    for (RedOp op : ops) {
      kernels::reduce(t, op, want.data(), a.data(), b.data(), kCount);
      for (bool inPlace : {false, true}) {
        ++cases;
        d.copy(da, a.data(), bytes);
        d.copy(db, b.data(), bytes);
        d.reduce(t, op, inPlace ? da : dd, da, db, kCount);
        d.copy(got.data(), inPlace ? da : dd, bytes);
        if (!settle(d)) return fail("a reduction did not finish within 30 s");
        const size_t wrong =
            chorus_test::compareBits(type, want.data(), got.data(), 0, kCount).wrong;
        if (wrong) {
          ++bad;
          std::printf("  type %d op %d %s: %zu of %zu wrong\n", int(t), int(op),
                      inPlace ? "in place" : "out of place", wrong, kCount);
        }
      }
    }
  }
  d.release(da), d.release(db), d.release(dd);
  std::printf("device_check: %s: %d of %d reductions right\n", d.name().c_str(), cases - bad,
              cases);
  return bad ? 1 : 0;
}

// The child's side: import, check the parent's values, add 0.5 to each in place.
int child(const std::string& kind, const std::string& hex) {
  auto d = open(kind);
  const auto h = device::IpcHandle::fromHex(hex);
  if (h.bytes != kIpcRange * sizeof(float)) return fail("child: the handle's size");
  auto* peer = static_cast<float*>(d->importMemory(h));
  std::vector<float> seen(kIpcRange), half(kIpcRange, 0.5f);
  d->copy(seen.data(), peer, h.bytes);
  if (!settle(*d)) return fail("child: the copy did not finish");
  for (size_t i = 0; i < kIpcRange; ++i)
    if (seen[i] != float(kIpcOffset + i))
      return fail("child: the parent's value at " + std::to_string(i));
  float* mine = static_cast<float*>(d->allocate(h.bytes));
  d->copy(mine, half.data(), h.bytes);
  d->reduce(DataType::Float32, RedOp::Sum, peer, peer, mine, kIpcRange);  // into the peer's
  if (!settle(*d)) return fail("child: the reduction did not finish");
  d->closeImported(peer);
  d->release(mine);
  return 0;
}

int oneSided(device::Device& d, const char* self, const std::string& kind) {
  std::vector<float> pattern(kIpcFloats);
  for (size_t i = 0; i < kIpcFloats; ++i) pattern[i] = float(i);
  auto* buffer = static_cast<float*>(d.allocate(kIpcFloats * sizeof(float)));
  d.copy(buffer, pattern.data(), kIpcFloats * sizeof(float));
  if (!settle(d)) return fail("the copy did not finish");
  const std::string hex = d.exportMemory(buffer + kIpcOffset, kIpcRange * sizeof(float)).toHex();
  std::string childArg = "--child";
  char* argv[] = {const_cast<char*>(self), const_cast<char*>(kind.c_str()), childArg.data(),
                  const_cast<char*>(hex.c_str()), nullptr};
  pid_t pid;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, environ) != 0)
    return fail("posix_spawn");
  int status = 0;
  const Deadline deadline = deadlineIn(std::chrono::seconds(60));
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return fail("the child did not finish within 60 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return fail("the child failed");
  std::vector<float> after(kIpcFloats);
  d.copy(after.data(), buffer, kIpcFloats * sizeof(float));
  if (!settle(d)) return fail("the copy back did not finish");
  size_t wrong = 0;
  for (size_t i = 0; i < kIpcFloats; ++i) {
    const bool inRange = i >= kIpcOffset && i < kIpcOffset + kIpcRange;
    if (after[i] != float(i) + (inRange ? 0.5f : 0.0f)) ++wrong;
  }
  d.release(buffer);
  std::printf("device_check: %s: one-sided reduce by another process: %zu of %zu wrong\n",
              d.name().c_str(), wrong, kIpcFloats);
  return wrong ? 1 : 0;
}

int badInput(device::Device& d) {
  std::vector<float> plain(16);
  int bad = 0;
  try {
    d.exportMemory(plain.data(), sizeof(float) * 16);
    bad += fail("exporting memory the device did not allocate was accepted");
  } catch (const Error& e) {
    if (e.code() != Result::InvalidArgument) bad += fail("export: not InvalidArgument");
  }
  try {
    device::IpcHandle::fromHex("zz");
    bad += fail("a malformed handle was accepted");
  } catch (const Error& e) {
    if (e.code() != Result::InvalidArgument) bad += fail("fromHex: not InvalidArgument");
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return fail("usage: device_check host|cuda");
  const std::string kind = argv[1];
  try {
    if (argc == 4 && std::string(argv[2]) == "--child") return child(kind, argv[3]);
    std::unique_ptr<device::Device> d;
    try {
      d = open(kind);
    } catch (const Error& e) {
      std::printf("device_check: skipped: %s\n", e.what());
      return 77;
    }
    int bad = reductions(*d);
    bad += oneSided(*d, argv[0], kind);
    bad += badInput(*d);
    std::printf("device_check: %s: %s\n", d->name().c_str(), bad ? "FAILED" : "passed");
    return bad ? 1 : 0;
  } catch (const std::exception& e) {
    return fail(std::string("unexpected exception: ") + e.what());
  }
}
