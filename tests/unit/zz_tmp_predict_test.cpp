#include "tuner/tuner.hpp"
#include "tuner/cost_model.hpp"
#include "tuner/tuning.hpp"
#include <gtest/gtest.h>
#include <cstdio>
namespace chorus {
TEST(TmpPredict, Print) {
  const Tuning tuning = defaultTuning(LinkClass::Shm);
  const LinkModel link = tuning.forType(DataType::Float32);
  for (int n : {2, 3, 4, 8}) {
    for (size_t bytes = 64 << 10; bytes <= (64u << 20); bytes *= 4) {
      std::printf("n=%d %9zu:", n, bytes);
      for (const Algorithm& a : allAlgorithms())
        if (a.collective == Collective::AllReduce && a.oneSided && !a.staged)
          std::printf(" %s %.1f", a.name, predictMicros(a, Collective::AllReduce, n, bytes / 4, 4, link, nullptr));
      std::printf("\n");
    }
  }
}
}
