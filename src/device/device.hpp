// The GPU executor's device interface: what the engine needs of a device, small enough to
// implement twice. The CUDA implementation (src/device/cuda_device.cpp, library
// chorus_cuda, built where nvcc is found) runs on a GPU; the host implementation does the
// same on host memory with the CPU kernels, so that the executor's logic is tested on
// machines without a GPU. Both pass the same conformance test (tests/gpu/device_check.cpp).
//
// One in-order queue per Device: copy() and reduce() are enqueued and return at once;
// record() marks the work enqueued so far and done() polls it. Every wait is bounded by a
// deadline (wait() returns false when it passes). exportMemory() describes an allocation
// so that another process of the host maps it with importMemory() (CUDA IPC, or the
// memfd behind a host allocation): the one-sided capability of the transports, for
// device memory.
#pragma once

#include "clock.hpp"

#include <chorus/chorus.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace chorus::device {

// The work enqueued before a record(); 0 is no event.
using Event = uint64_t;

// An exported allocation, as bytes another process can be sent (toHex/fromHex).
struct IpcHandle {
  std::array<uint8_t, 96> data{};  // the implementation's own description
  uint64_t offset = 0;             // of the pointer exported within its allocation
  uint64_t bytes = 0;              // of the range exported
  std::string toHex() const;
  static IpcHandle fromHex(const std::string& hex);  // throws Error(InvalidArgument)
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;  // "host", "cuda:0 (NVIDIA H200)"
  // Memory the device's work reads and writes, and that exportMemory() can export. Throws
  // Error(SystemError) when out of memory; release(nullptr) does nothing.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  // dst = src (bytes); either side may be host memory the device can reach.
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  // dst[i] = a[i] OP b[i], as kernels::reduce (Avg reduces as Sum); dst may alias a or b.
  virtual void reduce(DataType type, RedOp op, void* dst, const void* a, const void* b,
                      size_t count) = 0;
  virtual Event record() = 0;
  // Whether the work before `e` has finished; never blocks. Throws on a device error.
  virtual bool done(Event e) = 0;
  // Polls done() until it is true (true) or the deadline passes (false).
  bool wait(Event e, Deadline deadline);
  // [p, p + bytes) of an allocate()d buffer for another process of this host.
  virtual IpcHandle exportMemory(void* p, size_t bytes) = 0;
  // Maps a handle another process exported; closeImported() unmaps it.
  virtual void* importMemory(const IpcHandle& handle) = 0;
  virtual void closeImported(void* p) = 0;
};

// Host memory (memAlloc buffers), the CPU kernels, synchronous work.
std::unique_ptr<Device> makeHostDevice();

}  // namespace chorus::device
