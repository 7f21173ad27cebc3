// Buffers: telling device pointers from host ones, ncclMemAlloc/ncclMemFree and buffer
// registration. This library has no GPU support: device buffers are refused clearly.
// Without Chorus's zero-copy API (chorus::memAlloc, Communicator::registerBuffer): plain
// page-aligned memory, and registration hands back a handle and registers nothing.
#include "nccl/nccl_comm.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

namespace chorus::nccl {
namespace {

// The few CUDA driver entry points needed to ask what a pointer is (cuda.h's values).
using CuInit = int (*)(unsigned int);
using CuPointerGetAttribute = int (*)(void* data, int attribute, unsigned long long ptr);
constexpr int kCuPointerAttributeMemoryType = 2;  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kCuPointerAttributeIsManaged = 8;   // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr int kCuMemoryTypeDevice = 2;            // CU_MEMORYTYPE_DEVICE

CuPointerGetAttribute driver() {
  static CuPointerGetAttribute get = []() -> CuPointerGetAttribute {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;  // no driver: no device memory can exist in this process
    auto init = reinterpret_cast<CuInit>(dlsym(lib, "cuInit"));
    auto attr = reinterpret_cast<CuPointerGetAttribute>(dlsym(lib, "cuPointerGetAttribute"));
    if (!init || !attr || init(0) != 0) return nullptr;
    return attr;
  }();
  return get;
}

}  // namespace

bool isDevicePointer(const void* ptr) {
  if (!ptr) return false;
  CuPointerGetAttribute get = driver();
  if (!get) return false;
  const auto address = reinterpret_cast<unsigned long long>(ptr);
  unsigned int memoryType = 0;
  if (get(&memoryType, kCuPointerAttributeMemoryType, address) != 0) return false;  // not CUDA's
  int managed = 0;
  if (get(&managed, kCuPointerAttributeIsManaged, address) == 0 && managed) return false;
  return memoryType == kCuMemoryTypeDevice;
}

void requireHost(const void* ptr, const char* what, const char* which) {
  if (isDevicePointer(ptr))
    throw Error(Result::InvalidUsage,
                std::string(which) +
                    " is device memory, and this libnccl (Chorus) was built "
                    "without GPU support: pass host buffers and a null stream");
  (void)what;
}

}  // namespace chorus::nccl

using namespace chorus::nccl;

#if CHORUS_NCCL_ZEROCOPY
// Chorus's zero-copy memory and registration (chorus::memAlloc, registerBuffer): peers on
// this machine read such buffers in place. CHORUS_NCCL_ZEROCOPY is set by nccl/CMakeLists.txt
// when chorus.hpp declares them.
NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  if (!ptr) return setError(nullptr, ncclInvalidArgument, "ncclMemAlloc: ptr is null");
  *ptr = nullptr;
  return guarded(nullptr, "ncclMemAlloc", [&] { *ptr = chorus::memAlloc(size); });
}

NCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  return guarded(nullptr, "ncclMemFree", [&] { chorus::memFree(ptr); });
}

NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
         void** handle) {
  if (!comm || !handle)
    return setError(comm, ncclInvalidArgument, "ncclCommRegister: comm or handle is null");
  *handle = nullptr;
  CallScope scope(comm);
  return guarded(comm, "ncclCommRegister", [&] {
    requireHost(buff, "ncclCommRegister", "the buffer");
    *handle = comm->ready().registerBuffer(buff, size);
  });
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  if (!comm) return setError(nullptr, ncclInvalidArgument, "ncclCommDeregister: comm is null");
  CallScope scope(comm);
  return guarded(comm, "ncclCommDeregister", [&] { comm->ready().deregister(handle); });
}

#else
// Page-aligned host memory (zero-copy shared buffers come with chorus::memAlloc).
NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  if (!ptr) return setError(nullptr, ncclInvalidArgument, "ncclMemAlloc: ptr is null");
  *ptr = nullptr;
  if (size == 0) return setError(nullptr, ncclInvalidArgument, "ncclMemAlloc: size is 0");
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (size > SIZE_MAX - page)
    return setError(nullptr, ncclInvalidArgument, "ncclMemAlloc: size too large");
  void* p = std::aligned_alloc(page, (size + page - 1) / page * page);
  if (!p)
    return setError(nullptr, ncclSystemError,
                    "ncclMemAlloc: out of memory for " + std::to_string(size) + " bytes");
  *ptr = p;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  std::free(ptr);
  return ncclSuccess;
}

namespace {
// What ncclCommRegister hands back: Chorus registers nothing yet (its transports copy or
// register on their own), so the handle only remembers the range, to check deregistration.
struct Registration {
  static constexpr uint64_t kMagic = 0x6368726e73726567;  // "chrnsreg"
  uint64_t magic = kMagic;
  ncclComm_t comm;
  void* buffer;
  size_t size;
};
}  // namespace

NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
         void** handle) {
  if (!comm || !handle)
    return setError(comm, ncclInvalidArgument, "ncclCommRegister: comm or handle is null");
  *handle = nullptr;
  if (!buff || size == 0)
    return setError(comm, ncclInvalidArgument, "ncclCommRegister: null buffer or size 0");
  return guarded(comm, "ncclCommRegister", [&] {
    requireHost(buff, "ncclCommRegister", "the buffer");
    *handle = new Registration{Registration::kMagic, comm, buff, size};
  });
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  auto* r = static_cast<Registration*>(handle);
  if (!comm || !r || r->magic != Registration::kMagic || r->comm != comm)
    return setError(comm, ncclInvalidArgument,
                    "ncclCommDeregister: not a handle ncclCommRegister made on this communicator");
  r->magic = 0;
  delete r;
  return ncclSuccess;
}

#endif  // CHORUS_NCCL_ZEROCOPY
