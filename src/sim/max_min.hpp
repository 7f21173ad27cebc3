// Max-min fair sharing of links by flows (progressive filling), the one sharing rule of both
// network models: the fabric's flows over NVLink, PCIe, NICs and switches, and the tuner's
// link classes' flows through their nodes' NICs (sim/network.hpp).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace chorus::sim {

// Flow f crosses the links links[begin[f]] .. links[begin[f + 1] - 1] (indices into
// `capacity`, bytes per us; begin has one entry more than there are flows). Returns every
// flow's rate: repeatedly, the link with the smallest fair share (remaining capacity over
// the flows not yet fixed on it) fixes its flows at that share. A flow on no link gets 0.
std::vector<double> maxMinRates(std::span<const int> links, std::span<const size_t> begin,
                                std::span<const double> capacity);

}  // namespace chorus::sim
