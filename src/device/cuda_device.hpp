// The CUDA implementation of device.hpp's interface (library chorus_cuda, where nvcc is
// found: libchorus itself does not need the CUDA runtime).
#pragma once

#include "device/device.hpp"

namespace chorus::device {

// GPU `ordinal`; throws Error(SystemError) where there is no CUDA device.
std::unique_ptr<Device> makeCudaDevice(int ordinal);

}  // namespace chorus::device
