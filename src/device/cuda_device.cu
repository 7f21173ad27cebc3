// The CUDA implementation of the device interface: cudaMalloc'd memory, one stream per
// Device, the CUDA reduction kernel, events polled with cudaEventQuery (never a blocking
// synchronize: waits keep their deadline), CUDA IPC for export and import. Compiled by
// nvcc into chorus_cuda (host code only; the kernel is kernels/cuda/reduce.cu).
#include "device/cuda_device.hpp"
#include "errors.hpp"
#include "kernels/cuda/reduce_cuda.hpp"

#include <cuda_runtime.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace chorus::device {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw Error(Result::SystemError,
                std::string("cuda device: ") + what + ": " + cudaGetErrorString(e));
}

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int ordinal) : ordinal_(ordinal) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
      throw Error(Result::SystemError, "cuda device: no CUDA device");
    if (ordinal < 0 || ordinal >= count)
      throwInvalid("cuda device: ordinal " + std::to_string(ordinal) + " of " +
                   std::to_string(count));
    check(cudaSetDevice(ordinal), "cudaSetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
    name_ = "cuda:" + std::to_string(ordinal) + " (" + prop.name + ")";
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~CudaDevice() override {
    for (auto& [id, e] : events_) cudaEventDestroy(e);
    for (auto& [p, base] : imported_) cudaIpcCloseMemHandle(base);
    cudaStreamDestroy(stream_);
  }
  std::string name() const override { return name_; }
  void* allocate(size_t bytes) override {
    select();
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    std::lock_guard lock(mutex_);
    allocations_[p] = bytes;
    return p;
  }
  void release(void* p) override {
    if (!p) return;
    {
      std::lock_guard lock(mutex_);
      if (!allocations_.erase(p)) throwInvalid("release: not a buffer of this device");
    }
    check(cudaFree(p), "cudaFree");
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    select();
    if (bytes && dst != src)
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_), "cudaMemcpyAsync");
  }
  void reduce(DataType type, RedOp op, void* dst, const void* a, const void* b,
              size_t count) override {
    select();
    check(kernels::cuda::reduce(type, op, dst, a, b, count, stream_), "reduce kernel launch");
  }
  Event record() override {
    select();
    cudaEvent_t e;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventRecord(e, stream_), "cudaEventRecord");
    std::lock_guard lock(mutex_);
    events_[++lastEvent_] = e;
    return lastEvent_;
  }
  bool done(Event id) override {
    std::lock_guard lock(mutex_);
    auto it = events_.find(id);
    if (it == events_.end()) return id <= lastEvent_;  // completed and released earlier
    const cudaError_t r = cudaEventQuery(it->second);
    if (r == cudaErrorNotReady) return false;
    check(r, "cudaEventQuery");
    cudaEventDestroy(it->second);
    events_.erase(it);
    return true;
  }
  IpcHandle exportMemory(void* p, size_t bytes) override {
    select();
    std::byte* base = nullptr;
    {
      std::lock_guard lock(mutex_);
      auto it = allocations_.upper_bound(p);  // the allocation at or below p
      if (it != allocations_.begin()) --it;
      if (it == allocations_.end() || static_cast<std::byte*>(p) < it->first ||
          static_cast<std::byte*>(p) + bytes > static_cast<std::byte*>(it->first) + it->second)
        throwInvalid("exportMemory: not within a buffer of this device (allocate)");
      base = static_cast<std::byte*>(it->first);
    }
    cudaIpcMemHandle_t handle;
    check(cudaIpcGetMemHandle(&handle, base), "cudaIpcGetMemHandle");
    IpcHandle h;
    static_assert(sizeof handle <= sizeof h.data);
    std::memcpy(h.data.data(), &handle, sizeof handle);
    h.offset = uint64_t(static_cast<std::byte*>(p) - base);
    h.bytes = bytes;
    return h;
  }
  void* importMemory(const IpcHandle& h) override {
    select();
    cudaIpcMemHandle_t handle;
    std::memcpy(&handle, h.data.data(), sizeof handle);
    void* base = nullptr;
    check(cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess),
          "cudaIpcOpenMemHandle");
    void* p = static_cast<std::byte*>(base) + h.offset;
    std::lock_guard lock(mutex_);
    imported_[p] = base;
    return p;
  }
  void closeImported(void* p) override {
    std::lock_guard lock(mutex_);
    auto it = imported_.find(p);
    if (it == imported_.end()) throwInvalid("closeImported: not an imported pointer");
    check(cudaIpcCloseMemHandle(it->second), "cudaIpcCloseMemHandle");
    imported_.erase(it);
  }

 private:
  void select() { check(cudaSetDevice(ordinal_), "cudaSetDevice"); }
  int ordinal_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  std::mutex mutex_;
  Event lastEvent_ = 0;
  std::map<Event, cudaEvent_t> events_;
  std::map<void*, void*> imported_;
  std::map<void*, size_t, std::less<>> allocations_;  // this device's, to export ranges of
};

}  // namespace

std::unique_ptr<Device> makeCudaDevice(int ordinal) {
  return std::make_unique<CudaDevice>(ordinal);
}

}  // namespace chorus::device
