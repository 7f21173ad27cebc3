#include "chorus_perf_table.hpp"

#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>

namespace perf {
namespace {

std::string formatted(const char* fmt, int width, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, width, v);
  return buf;
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof(esc), "\\u%04x", c);
          out += esc;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string jsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string jsonTiming(const Timing& t) {
  std::ostringstream o;
  o << "{\"time\":" << jsonNumber(t.timeUs) << ",\"alg_bw\":" << jsonNumber(t.algBw)
    << ",\"bus_bw\":" << jsonNumber(t.busBw)
    << ",\"nwrong\":" << (t.wrong < 0 ? std::string("null") : std::to_string(t.wrong))
    << ",\"iterations\":" << t.iters << "}";
  return o.str();
}

std::string timingColumns(const Timing& t) {
  char wrong[32];
  if (t.wrong < 0) {
    std::snprintf(wrong, sizeof(wrong), "%5s", "N/A");
  } else {
    std::snprintf(wrong, sizeof(wrong), "%5lld", static_cast<long long>(t.wrong));
  }
  char buf[128];
  std::snprintf(buf, sizeof(buf), "  %7s  %6s  %6s  %s", fitNumber(t.timeUs, 7).c_str(),
                fitNumber(t.algBw, 6).c_str(), fitNumber(t.busBw, 6).c_str(), wrong);
  return buf;
}

// printf into a line, trailing blanks dropped.
template <class... A>
void printTrimmed(std::FILE* out, const char* fmt, A... args) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), fmt, args...);
  std::string line(buf);
  line.erase(line.find_last_not_of(' ') + 1);
  std::fprintf(out, "%s\n", line.c_str());
}

}  // namespace

std::string fitNumber(double v, int width) {
  int digits = 1;  // digits before the decimal point
  for (double p = 10; std::fabs(v) >= p && digits < 40; p *= 10) ++digits;
  if (digits <= width - 3) return formatted("%*.2f", width, v);
  if (digits <= width - 2) return formatted("%*.1f", width, v);
  if (digits <= width) return formatted("%*.0f", width, v);
  return formatted("%*.1e", width, v);
}

void Report::printConfig(const Args& args, const std::vector<std::string>& rankLines,
                         const std::string& extra) {
  std::fprintf(out_, "# Collective test starting: %s\n", program_.c_str());
  std::fprintf(out_,
               "# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d "
               "iters: %d agg iters: 1 validation: %d graph: 0\n",
               args.minBytes, args.maxBytes, args.stepFactor > 1 ? args.stepFactor : args.stepBytes,
               args.stepFactor > 1 ? "factor" : "bytes", args.warmupIters, args.iters,
               args.check > 0 ? 1 : 0);
  std::fprintf(out_, "# Blocking Enabled: wait for completion after each collective\n");
  if (args.minTimeMs > 0) {
    std::fprintf(out_, "# Small sizes repeat until a timed loop lasts >= %g ms (-T)\n",
                 args.minTimeMs);
  }
  if (!extra.empty()) std::fprintf(out_, "# %s\n", extra.c_str());
  std::fprintf(out_, "#\n# Using devices\n");
  for (const auto& line : rankLines) std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

void Report::printTableHeader() {
  // The layout of nccl-tests' table (columns are whitespace-separated for scripts).
  const char* fmt = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s";
  std::fprintf(out_, "#\n");
  printTrimmed(out_,
               "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place",
               "", "", "", "", "");
  printTrimmed(out_, fmt, "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
               "#wrong", "time", "algbw", "busbw", "#wrong");
  printTrimmed(out_, fmt, "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
               "(GB/s)", "(GB/s)", "");
  std::fflush(out_);
}

void Report::printRow(const Row& row) {
  std::fprintf(out_, "%12zu  %12zu  %8s  %6s  %6d%s%s\n", row.bytes, row.count, typeName(row.type),
               row.op.c_str(), row.root, timingColumns(row.outOfPlace).c_str(),
               timingColumns(row.inPlace).c_str());
  std::fflush(out_);
  for (const Timing* t : {&row.outOfPlace, &row.inPlace}) {
    if (t->wrong > 0) wrongTotal_ += t->wrong;
    bwSum_ += t->busBw;
    ++bwCount_;
  }
  rows_.push_back(row);
}

void Report::printFooter() {
  std::fprintf(out_, "# %-20s : %lld %s\n", "Out of bounds values",
               static_cast<long long>(wrongTotal_), wrongTotal_ ? "FAILED" : "OK");
  std::fprintf(out_, "# %-20s : %g\n", "Avg bus bandwidth", avgBusBw());
  std::fprintf(out_, "#\n");
  std::fprintf(out_, "# Collective test concluded: %s\n", program_.c_str());
  std::fflush(out_);
}

bool Report::writeJson(const Args& args, const std::vector<std::string>& rankLines,
                       const std::string& extra, const std::vector<std::string>& errors) const {
  std::ofstream f(args.jsonPath);
  if (!f) {
    std::fprintf(stderr, "# cannot write JSON output to %s\n", args.jsonPath.c_str());
    return false;
  }
  char when[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  f << "{\"version\":1,\"program\":" << jsonString(program_) << ",\"end_time\":" << jsonString(when)
    << ",\"args\":[";
  for (size_t i = 0; i < args.argv.size(); ++i) f << (i ? "," : "") << jsonString(args.argv[i]);
  f << "],\"config\":{\"collective\":" << jsonString(collName(args.coll))
    << ",\"minimum_bytes\":" << args.minBytes << ",\"maximum_bytes\":" << args.maxBytes
    << ",\"step_factor\":" << args.stepFactor << ",\"step_bytes\":" << args.stepBytes
    << ",\"warmup_iters\":" << args.warmupIters << ",\"iterations\":" << args.iters
    << ",\"validation\":" << args.check << ",\"average\":" << args.average
    << ",\"min_time_ms\":" << jsonNumber(args.minTimeMs)
    << ",\"algorithm\":" << jsonString(args.algorithm) << ",\"info\":" << jsonString(extra)
    << "},\"devices\":[";
  for (size_t i = 0; i < rankLines.size(); ++i) f << (i ? "," : "") << jsonString(rankLines[i]);
  f << "],\"results\":[";
  for (size_t i = 0; i < rows_.size(); ++i) {
    const Row& r = rows_[i];
    f << (i ? ",\n" : "\n") << "{\"size\":" << r.bytes << ",\"count\":" << r.count
      << ",\"type\":" << jsonString(typeName(r.type)) << ",\"redop\":" << jsonString(r.op)
      << ",\"root\":" << r.root << ",\"out_of_place\":" << jsonTiming(r.outOfPlace)
      << ",\"in_place\":" << jsonTiming(r.inPlace)
      << ",\"actual_iterations\":" << r.outOfPlace.iters + r.inPlace.iters << "}";
  }
  f << "],\"out_of_bounds\":{\"count\":" << wrongTotal_
    << ",\"okay\":" << (wrongTotal_ == 0 ? "true" : "false")
    << "},\"average_bus_bandwidth\":{\"bandwidth\":" << jsonNumber(avgBusBw()) << "},\"errors\":[";
  for (size_t i = 0; i < errors.size(); ++i) f << (i ? "," : "") << jsonString(errors[i]);
  f << "]}\n";
  return static_cast<bool>(f);
}

}  // namespace perf
