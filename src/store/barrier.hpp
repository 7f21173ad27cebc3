// A barrier over the store: one counter and one flag, O(1) keys whatever the rank count.
#pragma once

#include "store/store.hpp"

#include <string>

namespace chorus {

inline void storeBarrier(Store& store, const std::string& name, int nranks, Deadline deadline) {
  if (store.add(name, 1) == nranks) store.set(name + "/done", {});
  store.get(name + "/done", deadline);
}

}  // namespace chorus
