// A registered algorithm by name, for tests: a name that is not registered fails the test
// with an exception naming it (never a null reference).
#pragma once

#include "algorithms/algorithms.hpp"

#include <stdexcept>
#include <string>

namespace chorus::test {

inline const Algorithm& registeredAlgorithm(Collective collective, const char* name) {
  const Algorithm* a = findAlgorithm(collective, name);
  if (!a) throw std::invalid_argument(std::string("no registered algorithm named ") + name);
  return *a;
}

inline const Algorithm& allReduce(const char* name) {
  return registeredAlgorithm(Collective::AllReduce, name);
}

}  // namespace chorus::test
