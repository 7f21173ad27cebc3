// The chorus::Error that `f` throws; a test failure (and an Error with Result::Success) when
// it throws none.
#pragma once

#include <gtest/gtest.h>
#include <chorus/chorus.hpp>

#include <utility>

namespace chorus::test {

template <typename F>
Error expectError(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no chorus::Error thrown";
  return Error(Result::Success, "");
}

}  // namespace chorus::test
