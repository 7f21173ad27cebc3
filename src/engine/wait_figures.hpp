// How long a waiting rank polls before it sleeps (CHORUS_SPIN_US's defaults): where the
// machine's ranks outnumber its cores all of it with sched_yield (no pause-polling there:
// CHORUS_PAUSE_SPIN_US is 0; engine.cpp, Engine::waitFor), else 50 us. chorus-sim's core
// pool takes the first (sim::Fabric::poolSpinUs).
#pragma once

#include <chrono>

namespace chorus {

inline constexpr std::chrono::microseconds kOversubscribedSpin{200};
inline constexpr std::chrono::microseconds kDefaultSpin{50};

}  // namespace chorus
