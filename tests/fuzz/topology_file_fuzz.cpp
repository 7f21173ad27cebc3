// The topology file parser (CHORUS_TOPO_FILE).
#include "fuzz_input.hpp"
#include "topology/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  chorus::fuzz::expectOnlyChorusErrors(
      [&] { (void)chorus::topo::parseTopologyFile(chorus::fuzz::text(data, size), "fuzz"); });
  return 0;
}
