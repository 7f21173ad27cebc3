// Throughput of the CPU reduction kernels against memcpy of the same bytes.
// bytes_per_second counts memory traffic: reduce reads two buffers and writes one
// (3 x buffer), memcpy reads one and writes one (2 x buffer). The `buffer` counter is the
// rate at which one buffer's worth of input is processed, comparable across all of them.
// Rows named .../generic run the portable kernels for comparison with the dispatched ones.
#include "kernels/copy.hpp"
#include "kernels/cpu/kernel_table.hpp"
#include "kernels/half.hpp"
#include "kernels/reduce.hpp"

#include <chorus/chorus.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using chorus::DataType;
using chorus::RedOp;
namespace k = chorus::kernels;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Bytes = std::unique_ptr<uint8_t, FreeDeleter>;

Bytes allocate(size_t bytes) {
  return Bytes(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)));
}

// Fills with ordinary numbers (no NaN, inf or subnormals, which can be slow paths).
void fill(DataType type, uint8_t* p, size_t count, float base) {
  for (size_t i = 0; i < count; ++i) {
    const float v = base + float(i % 97) * 0.25f;
    switch (type) {
      case DataType::Float16:
        reinterpret_cast<uint16_t*>(p)[i] = k::floatToHalf(v);
        break;
      case DataType::Bfloat16:
        reinterpret_cast<uint16_t*>(p)[i] = k::floatToBf16(v);
        break;
      case DataType::Float8e4m3:
        p[i] = k::floatToFp8e4m3(v / 16);
        break;
      case DataType::Float8e5m2:
        p[i] = k::floatToFp8e5m2(v / 16);
        break;
      case DataType::Float32:
        reinterpret_cast<float*>(p)[i] = v;
        break;
      case DataType::Float64:
        reinterpret_cast<double*>(p)[i] = v;
        break;
      case DataType::Int32:
        reinterpret_cast<int32_t*>(p)[i] = int32_t(i * 7);
        break;
      default:
        p[i] = uint8_t(i);
        break;
    }
  }
}

void setCounters(benchmark::State& state, size_t bufferBytes, int buffersTouched) {
  const double iters = double(state.iterations());
  state.SetBytesProcessed(int64_t(iters * double(bufferBytes) * buffersTouched));
  state.counters["buffer"] = benchmark::Counter(
      iters * double(bufferBytes), benchmark::Counter::kIsRate, benchmark::Counter::OneK::kIs1024);
}

// isa: nullptr for the public reduce() (dispatched), else a kernelTable() name.
void reduceBench(benchmark::State& state, DataType type, RedOp op, const char* isa) {
  const size_t bytes = size_t(state.range(0));
  const size_t count = bytes / chorus::sizeOf(type);
  const k::KernelTable* table = isa ? k::kernelTable(isa) : nullptr;
  if (isa && !table) {
    state.SkipWithError("instruction set not supported by this CPU");
    return;
  }
  Bytes a = allocate(bytes), b = allocate(bytes), d = allocate(bytes);
  fill(type, a.get(), count, 1.0f);
  fill(type, b.get(), count, 2.0f);
  std::memset(d.get(), 0, bytes);
  for (auto _ : state) {
    if (table) {
      table->reduce[int(type)][int(op)](d.get(), a.get(), b.get(), count);
    } else {
      k::reduce(type, op, d.get(), a.get(), b.get(), count);
    }
    benchmark::ClobberMemory();
  }
  setCounters(state, bytes, 3);
  state.SetLabel(table ? table->name : k::isaName());
}

// k sources of `bytes` each folded into a destination (float sum), as the engine's fold
// chain does: `onePass` through reduceMany (each source read once, the destination written
// once), else as the engine did before it, k-1 pairwise reduces over each 256 KiB slice
// (kPipelineSliceBytes) in turn. Counts k + 1 buffers of traffic.
void foldBench(benchmark::State& state, bool onePass) {
  const size_t bytes = size_t(state.range(0)), k = size_t(state.range(1));
  const size_t count = bytes / sizeof(float), slice = (256 << 10) / sizeof(float);
  std::vector<Bytes> sources;
  std::vector<const void*> ptrs;
  for (size_t j = 0; j < k; ++j) {
    sources.push_back(allocate(bytes));
    fill(DataType::Float32, sources.back().get(), count, float(j));
    ptrs.push_back(sources.back().get());
  }
  Bytes d = allocate(bytes);
  std::memset(d.get(), 0, bytes);
  float* dst = reinterpret_cast<float*>(d.get());
  for (auto _ : state) {
    if (onePass) {
      k::reduceMany(DataType::Float32, RedOp::Sum, dst, ptrs, count);
    } else {
      for (size_t i = 0; i < count; i += slice) {
        const size_t n = std::min(slice, count - i);
        auto at = [&](size_t j) { return static_cast<const float*>(ptrs[j]) + i; };
        k::reduce(DataType::Float32, RedOp::Sum, dst + i, at(0), at(1), n);
        for (size_t j = 2; j < k; ++j)
          k::reduce(DataType::Float32, RedOp::Sum, dst + i, dst + i, at(j), n);
      }
    }
    benchmark::ClobberMemory();
  }
  setCounters(state, bytes, int(k) + 1);
}

void memcpyBench(benchmark::State& state) {
  const size_t bytes = size_t(state.range(0));
  Bytes a = allocate(bytes), d = allocate(bytes);
  std::memset(a.get(), 1, bytes);
  std::memset(d.get(), 0, bytes);
  for (auto _ : state) {
    std::memcpy(d.get(), a.get(), bytes);
    benchmark::ClobberMemory();
  }
  setCounters(state, bytes, 2);
}

// kernels::copyStreaming (non-temporal stores): the engine's copy into a large output.
void copyStreamingBench(benchmark::State& state) {
  const size_t bytes = size_t(state.range(0));
  Bytes a = allocate(bytes), d = allocate(bytes);
  std::memset(a.get(), 1, bytes);
  std::memset(d.get(), 0, bytes);
  for (auto _ : state) {
    k::copyStreaming(d.get(), a.get(), bytes);
    benchmark::ClobberMemory();
  }
  setCounters(state, bytes, 2);
}

void registerAll() {
  auto sizes = [](benchmark::internal::Benchmark* b) {
    b->Arg(64 << 10)->Arg(1 << 20)->Arg(16 << 20);
  };
  sizes(benchmark::RegisterBenchmark("memcpy", memcpyBench));
  for (bool onePass : {false, true})
    benchmark::RegisterBenchmark(
        onePass ? "fold/Float32/sum/one_pass" : "fold/Float32/sum/pairwise", foldBench, onePass)
        ->Args({1 << 20, 4})
        ->Args({16 << 20, 4})
        ->Args({4 << 20, 8});
  benchmark::RegisterBenchmark("copy_streaming", copyStreamingBench)->Arg(16 << 20)->Arg(64 << 20);
  benchmark::RegisterBenchmark("memcpy", memcpyBench)->Arg(64 << 20);
  struct Case {
    DataType type;
    RedOp op;
    const char* isa;
  };
  const Case cases[] = {
      {DataType::Float32, RedOp::Sum, nullptr},      {DataType::Float32, RedOp::Max, nullptr},
      {DataType::Float16, RedOp::Sum, nullptr},      {DataType::Float16, RedOp::Max, nullptr},
      {DataType::Bfloat16, RedOp::Sum, nullptr},     {DataType::Bfloat16, RedOp::Max, nullptr},
      {DataType::Int32, RedOp::Sum, nullptr},        {DataType::Float64, RedOp::Sum, nullptr},
      {DataType::Float8e4m3, RedOp::Sum, nullptr},   {DataType::Float32, RedOp::Sum, "generic"},
      {DataType::Float16, RedOp::Sum, "generic"},    {DataType::Bfloat16, RedOp::Sum, "generic"},
      {DataType::Float8e4m3, RedOp::Sum, "generic"},
  };
  for (const Case& c : cases) {
    std::string name = std::string("reduce/") + chorus::toString(c.type) + "/" +
                       chorus::toString(c.op) + (c.isa ? std::string("/") + c.isa : "");
    sizes(benchmark::RegisterBenchmark(name.c_str(), reduceBench, c.type, c.op, c.isa));
  }
}

}  // namespace

int main(int argc, char** argv) {
  registerAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
