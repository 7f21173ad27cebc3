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

// The flows as a fluid, started together: transfer t carries bytes[t] over its flows (the
// f with transferOf[f] == t: its QPs, striped adaptively, so its rate is their rates'
// sum), the flows share the links max-min fairly, and whenever transfers finish the others'
// shares are solved again (progressive filling at every completion): a flow that shared a
// link with one that ended speeds up. Only the connected components (flows joined by shared
// links) where a transfer ended are solved again; max-min splits over them, so the others'
// shares stand (exact). Returns every transfer's finish time (us): 0 for one
// of no bytes, +infinity for one that gets no rate. One flow a transfer and equal bytes
// left: the shares hold to the end (max-min's allocation stays max-min fair as the fastest
// flows leave), so that solve is the last: bytes / maxMinRates. The bounds on its cost
// (each solve is one maxMinRates over the flows left): transfers that would finish within
// kFluidTogether (relative) of the next completion leave with it, at their own finish
// times (so the others' next shares start up to that much early); and after kFluidSolves
// solves the transfers left keep their shares to the end (they speed up no more).
constexpr int kFluidSolves = 4;
constexpr double kFluidTogether = 1.0 / 16;
std::vector<double> maxMinFinish(std::span<const int> links, std::span<const size_t> begin,
                                 std::span<const double> capacity, std::span<const int> transferOf,
                                 std::span<const double> bytes);

}  // namespace chorus::sim
