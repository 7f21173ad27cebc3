// The tune file parser (CHORUS_TUNE_FILE); what parses must print and parse back.
#include "fuzz_input.hpp"
#include "tuner/tuning.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  chorus::fuzz::expectOnlyChorusErrors([&] {
    for (const auto& t : chorus::parseTuneFile(chorus::fuzz::text(data, size), "fuzz"))
      (void)t.toLine();
  });
  return 0;
}
