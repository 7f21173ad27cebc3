// The nccl-tests style report: configuration header, one row per size, footer, and the
// same rows as JSON (-J). Only rank 0 creates a Report.
#pragma once

#include "chorus_perf_args.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace perf {

struct Timing {
  double timeUs = 0;
  double algBw = 0;    // GB/s, GB = 1e9 bytes
  double busBw = 0;    // GB/s
  int64_t wrong = -1;  // elements wrong summed over ranks; -1 = not checked (N/A)
  long iters = 0;      // timed calls actually run (>= -n; more for small sizes, -T)
};

struct Row {
  size_t bytes = 0;
  size_t count = 0;
  Type type = Type::Float32;
  std::string op;  // "sum", or "none" for collectives without a reduction
  int root = -1;
  Timing outOfPlace;
  Timing inPlace;
};

class Report {
 public:
  Report(std::FILE* out, std::string program) : out_(out), program_(std::move(program)) {}

  // "# nThread 1 nGpus 1 minBytes ..." and one line per rank (pid, host, transport).
  void printConfig(const Args& args, const std::vector<std::string>& rankLines,
                   const std::string& extra);
  void printTableHeader();
  void printRow(const Row& row);
  // "# Out of bounds values : N OK|FAILED", "# Avg bus bandwidth    : X", "#".
  void printFooter();
  // Writes the whole run to args.jsonPath; false (with a message on stderr) on failure.
  bool writeJson(const Args& args, const std::vector<std::string>& rankLines,
                 const std::string& extra, const std::vector<std::string>& errors) const;

  int64_t wrongTotal() const { return wrongTotal_; }
  double avgBusBw() const { return bwCount_ ? bwSum_ / bwCount_ : 0.0; }

 private:
  std::FILE* out_;
  std::string program_;
  std::vector<Row> rows_;
  int64_t wrongTotal_ = 0;
  double bwSum_ = 0;
  long bwCount_ = 0;
};

// Formats v right-aligned in `width` columns with as many decimals as fit (as nccl-tests).
std::string fitNumber(double v, int width);

}  // namespace perf
