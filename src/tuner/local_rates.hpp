// Measures this host's reduction rate per data type and its copy rate (what the cost
// model charges for local work), in about a millisecond.
#pragma once

#include "tuner/tuning.hpp"

namespace chorus {

// Fills tuning.model.copyBytesPerUs, .reduceBytesPerUs (float) and reduceBytesPerUs[type]
// from timed runs of the kernels, each multiplied by `share` (the part of a core a rank
// gets when ranks outnumber cores).
void measureLocalRates(Tuning& tuning, double share);

}  // namespace chorus
