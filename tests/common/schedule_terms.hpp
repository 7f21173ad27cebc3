// What schedules send and reduce, counted in one place for the tests that check the
// schedules' own terms against the formulas (tests/unit/schedule_test.cpp,
// tests/sim/formulas_test.cpp).
#pragma once

#include "algorithms/algorithms.hpp"

#include <algorithm>
#include <cstddef>

namespace chorus::test {

struct ScheduleTerms {
  size_t sends = 0;            // Send steps
  size_t rounds = 0;           // message rounds: a send and the receive right after it are one
  size_t elementsSent = 0;     // by the Send steps
  size_t elementsReduced = 0;  // by RecvReduce and Reduce steps
};

inline ScheduleTerms termsOf(const Schedule& schedule) {
  ScheduleTerms t;
  const auto& steps = schedule.steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    const bool receive = step.kind == StepKind::Recv || step.kind == StepKind::RecvReduce;
    if (step.kind == StepKind::Send) {
      ++t.sends;
      t.elementsSent += step.src.count;
      const bool pairedWithNext =
          i + 1 < steps.size() &&
          (steps[i + 1].kind == StepKind::Recv || steps[i + 1].kind == StepKind::RecvReduce);
      if (!pairedWithNext) ++t.rounds;  // else the receive counts the round
    } else if (receive) {
      ++t.rounds;
    }
    if (step.kind == StepKind::RecvReduce || step.kind == StepKind::Reduce)
      t.elementsReduced += step.dst.count;
  }
  return t;
}

// The most of each term any rank has (not always the same rank).
inline ScheduleTerms busiestTerms(const Algorithm& algorithm, int nranks, size_t count,
                                  int root = 0) {
  ScheduleTerms most;
  for (int r = 0; r < nranks; ++r) {
    const ScheduleTerms t =
        termsOf(algorithm.build({algorithm.collective, r, nranks, count, root, nullptr}));
    most.sends = std::max(most.sends, t.sends);
    most.rounds = std::max(most.rounds, t.rounds);
    most.elementsSent = std::max(most.elementsSent, t.elementsSent);
    most.elementsReduced = std::max(most.elementsReduced, t.elementsReduced);
  }
  return most;
}

}  // namespace chorus::test
