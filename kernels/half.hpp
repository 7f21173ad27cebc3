// Scalar conversions between float and the 16-bit and 8-bit float formats.
// All float->narrow conversions round to nearest-even; NaN stays NaN; overflow gives inf
// (fp8 e4m3 has no inf: it saturates to NaN as in the OCP FP8 spec's "fn" variant).
#pragma once

#include <cstdint>

namespace chorus::kernels {

float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bf16ToFloat(uint16_t b);
uint16_t floatToBf16(float f);
float fp8e4m3ToFloat(uint8_t v);
uint8_t floatToFp8e4m3(float f);
float fp8e5m2ToFloat(uint8_t v);
uint8_t floatToFp8e5m2(float f);

}  // namespace chorus::kernels
