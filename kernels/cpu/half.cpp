// Scalar conversions of kernels/half.hpp. The bit manipulation lives in float_bits.hpp,
// shared with the vectorised reduction loops, so scalar and vector paths round alike.
#include "kernels/half.hpp"

#include "kernels/cpu/float_bits.hpp"

namespace chorus::kernels {

float halfToFloat(uint16_t h) { return bits::toFloat<bits::Half>(h); }
uint16_t floatToHalf(float f) { return uint16_t(bits::fromFloat<bits::Half>(f)); }
float bf16ToFloat(uint16_t b) { return bits::toFloat<bits::Bf16>(b); }
uint16_t floatToBf16(float f) { return uint16_t(bits::fromFloat<bits::Bf16>(f)); }
float fp8e4m3ToFloat(uint8_t v) { return bits::toFloat<bits::E4m3>(v); }
uint8_t floatToFp8e4m3(float f) { return uint8_t(bits::fromFloat<bits::E4m3>(f)); }
float fp8e5m2ToFloat(uint8_t v) { return bits::toFloat<bits::E5m2>(v); }
uint8_t floatToFp8e5m2(float f) { return uint8_t(bits::fromFloat<bits::E5m2>(f)); }

}  // namespace chorus::kernels
