// Scalar conversions of kernels/half.hpp. The bit manipulation lives in float_bits.hpp,
// shared with the vectorised reduction loops, so scalar and vector paths round alike.
#include "kernels/half.hpp"

#include "kernels/cpu/float_bits.hpp"

namespace chorus::kernels {

float halfToFloat(uint16_t h) { return bits::halfToFloat(h); }
uint16_t floatToHalf(float f) { return bits::floatToHalf(f); }
float bf16ToFloat(uint16_t b) { return bits::bf16ToFloat(b); }
uint16_t floatToBf16(float f) { return bits::floatToBf16(f); }
float fp8e4m3ToFloat(uint8_t v) { return bits::e4m3ToFloat(v); }
uint8_t floatToFp8e4m3(float f) { return bits::floatToE4m3(f); }
float fp8e5m2ToFloat(uint8_t v) { return bits::e5m2ToFloat(v); }
uint8_t floatToFp8e5m2(float f) { return bits::floatToE5m2(f); }

}  // namespace chorus::kernels
