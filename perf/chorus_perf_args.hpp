// Command-line options shared by chorus-perf and compare_mpi (nccl-tests flags).
#pragma once

#include "chorus_perf_types.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace perf {

struct Args {
  size_t minBytes = 32u << 20;  // -b
  size_t maxBytes = 32u << 20;  // -e
  size_t stepFactor = 2;        // -f (a factor > 1 wins over -i)
  size_t stepBytes = 1u << 20;  // -i
  int iters = 20;               // -n
  int warmupIters = 5;          // -w
  int check = 1;                // -c: check iterations per size and placement (0: none)
  std::vector<Type> types = {Type::Float32};  // -d
  std::vector<Op> ops = {Op::Sum};            // -o
  int root = 0;                               // -r (-1: every rank in turn)
  int average = 1;                            // -a: 0 rank 0, 1 avg, 2 min, 3 max
  bool blocking = true;                       // -z (the only mode)
  std::string algorithm = "auto";             // -A (chorus-perf only; "each": every one)
  int repeats = 3;                            // -K: with -A each, runs per size (median)
  std::string jsonPath;                       // -J
  Coll coll = Coll::AllReduce;                // -t
  double minTimeMs = 50;   // -T: repeat small sizes until a timed run lasts this long
  bool hugePages = false;  // -H: madvise(MADV_HUGEPAGE) on the benchmark buffers
  int registration =
      0;  // -R: 0 plain buffers, 1 registered, 2 the library's allocator, 3 send only
  std::vector<std::string> argv;  // as given, for the JSON report
};

// What a program accepts beyond the common flags.
struct ArgsSpec {
  const char* program;  // name in the usage text
  bool algorithmFlag;   // accepts -A
};

enum class ParseStatus { Ok, Help, Error };

// Parses argv into args. The collective defaults to the one named in argv[0] (e.g. a
// link named all_gather_perf), else all-reduce. On Error, `error` says why.
ParseStatus parseArgs(int argc, char** argv, const ArgsSpec& spec, Args& args, std::string& error);
std::string usage(const ArgsSpec& spec);

// "64M" -> 67108864 (K, M, G: powers of 1024, as nccl-tests). nullopt if malformed.
std::optional<size_t> parseSize(std::string_view text);

// The sizes of a sweep: minBytes, then times stepFactor (or plus stepBytes), <= maxBytes.
std::vector<size_t> sweepSizes(const Args& args);

}  // namespace perf
