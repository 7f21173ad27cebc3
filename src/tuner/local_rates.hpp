// Measures this host's reduction rate per data type and its copy rate (what the cost
// model charges for local work), in about a millisecond.
#pragma once

#include "tuner/tuning.hpp"

namespace chorus {

// Fills tuning.model.copyBytesPerUs, .reduceBytesPerUs (float) and reduceBytesPerUs[type]
// from timed runs of the kernels, each multiplied by `share` (the part of a core a rank
// gets when ranks outnumber cores).
void measureLocalRates(Tuning& tuning, double share);

// The copy rate no lower than kCopyOverReduce times the float reduction's: a copy moves two
// streams per byte (read, write), a reduction three (two reads, a write), so a memcpy timed
// below that was disturbed (np 2 probes at load 7-12: copy 2.7-2.9e4 B/us against reduce
// 3.1-3.2e4 in 2 of 3; 5.5e4 against 3.4e4 in the third; np 4's 1.7-2.1x). The order
// decides np 2 from 2 MiB on shm: rd pays N / copy + N / reduce a rank, ring 1.5 N / copy +
// 0.5 N / reduce, so a copy at or below the reduction put rd first, where ring ran
// 1.10-1.33x rd at 16 MiB in all 3 runs (0.85-1.11x at 2 MiB). Called by measureLocalRates.
inline constexpr double kCopyOverReduce = 1.5;
double copyRateFloor(double copyBytesPerUs, double reduceBytesPerUs);

}  // namespace chorus
