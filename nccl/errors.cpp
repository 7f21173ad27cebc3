// NCCL's result codes and error strings, and the message behind ncclGetLastError.
#include "nccl/nccl_comm.hpp"

#include <new>

namespace chorus::nccl {
namespace {
thread_local std::string threadLastError;
}

ncclResult_t setError(ncclComm_t comm, ncclResult_t code, const std::string& message) {
  threadLastError = message;
  if (comm) comm->lastError = message;
  return code;
}

ncclResult_t toNccl(Result result) {
  switch (result) {
    case Result::Success:
      return ncclSuccess;
    case Result::SystemError:
      return ncclSystemError;
    case Result::InternalError:
      return ncclInternalError;
    case Result::InvalidArgument:
      return ncclInvalidArgument;
    case Result::InvalidUsage:
      return ncclInvalidUsage;
    case Result::RemoteError:
      return ncclRemoteError;
    case Result::InProgress:
      return ncclInProgress;
    case Result::Timeout:
      // NCCL has no timeout code: a wait that ran out waited for a peer that never came.
      return ncclRemoteError;
  }
  return ncclInternalError;
}

ncclResult_t guarded(ncclComm_t comm, const char* what, const std::function<void()>& body) {
  try {
    body();
    return ncclSuccess;
  } catch (const Error& e) {
    return setError(comm, toNccl(e.code()), std::string(what) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return setError(comm, ncclSystemError, std::string(what) + ": out of memory");
  } catch (const std::exception& e) {
    return setError(comm, ncclInternalError, std::string(what) + ": " + e.what());
  }
}

}  // namespace chorus::nccl

using namespace chorus::nccl;

NCCL_API(const char*, ncclGetErrorString, ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the Chorus developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

NCCL_API(const char*, ncclGetLastError, ncclComm_t comm) {
  if (comm && !comm->lastError.empty() && threadLastError.empty()) return comm->lastError.c_str();
  return threadLastError.c_str();
}
