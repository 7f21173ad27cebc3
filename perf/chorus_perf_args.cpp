#include "chorus_perf_args.hpp"

#include <getopt.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace perf {
namespace {

std::optional<long> parseInt(const char* text) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0') return std::nullopt;
  return v;
}

std::optional<double> parseDouble(const char* text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0') return std::nullopt;
  return v;
}

}  // namespace

std::optional<size_t> parseSize(std::string_view text) {
  if (text.empty()) return std::nullopt;
  size_t mult = 1;
  switch (text.back()) {
    case 'G':
    case 'g':
      mult <<= 10;
      [[fallthrough]];
    case 'M':
    case 'm':
      mult <<= 10;
      [[fallthrough]];
    case 'K':
    case 'k':
      mult <<= 10;
      text.remove_suffix(1);
      break;
    default:
      break;
  }
  if (text.empty()) return std::nullopt;
  size_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<size_t>(c - '0');
  }
  return v * mult;
}

std::vector<size_t> sweepSizes(const Args& args) {
  std::vector<size_t> sizes;
  for (size_t s = args.minBytes; s <= args.maxBytes;) {
    sizes.push_back(s);
    const size_t next = args.stepFactor > 1 ? s * args.stepFactor : s + args.stepBytes;
    if (next <= s) break;  // 0 with a factor, or overflow
    s = next;
  }
  return sizes;
}

std::string usage(const ArgsSpec& spec) {
  std::ostringstream o;
  o << "USAGE: " << spec.program << " [options]\n"
    << "  -t,--collective <name>   allreduce (default), allgather, reducescatter, broadcast,\n"
    << "                           reduce, sendrecv, alltoall\n"
    << "  -b,--minbytes <size>     smallest size in bytes, suffix K/M/G (default 32M)\n"
    << "  -e,--maxbytes <size>     largest size in bytes (default 32M)\n"
    << "  -f,--stepfactor <n>      multiply the size by n each step (default 2)\n"
    << "  -i,--stepbytes <size>    add this many bytes each step instead (with -f 1 or alone)\n"
    << "  -n,--iters <n>           timed iterations per size (default 20; more for small\n"
    << "                           sizes, see -T)\n"
    << "  -w,--warmup_iters <n>    warm-up iterations per size (default 5)\n"
    << "  -c,--check <n>           check iterations per size and placement, 0 = none (default 1)\n"
    << "  -d,--datatype <type>     int8 uint8 int32 uint32 int64 uint64 half float double\n"
    << "                           bfloat16 f8e4m3 f8e5m2, or all (default float)\n"
    << "  -o,--op <op>             sum prod min max avg, or all (default sum)\n"
    << "  -r,--root <rank>         root of broadcast/reduce; -1 = every rank in turn (default 0)\n"
    << "  -a,--average <0..3>      time reported: 0 rank 0, 1 average, 2 min, 3 max (default 1)\n"
    << "  -z,--blocking <0|1>      accepted; every call is waited for (blocking is the only "
       "mode)\n";
  if (spec.algorithmFlag) {
    o << "  -A,--algorithm <spec>    Communicator::setAlgorithm(spec); auto = library's choice;\n"
      << "                           each = every algorithm and auto, interleaved, one table;\n"
      << "                           each=NAME,... (e.g. each=rd,auto): those only\n"
      << "  -K,--repeats <n>         with -A each: runs per algorithm and size, median (3)\n";
  }
  o << "  -R,--local_register <0>  buffers as nccl-tests' -R: 0 plain (mmap), 1 plain and\n"
    << "                           registered (registerBuffer), 2 from memAlloc, 3 the\n"
    << "                           send buffer registered, the receive buffer plain\n";
  o << "  -J,--output_file <file>  write every row as JSON (rank 0)\n"
    << "  -T,--min_time <ms>       repeat a size until its timed loop lasts this long, so\n"
    << "                           small-size latency is accurate; 0 = exactly -n (default 50)\n"
    << "  -H,--hugepages <0|1>     madvise(MADV_HUGEPAGE) the buffers (default 0)\n"
    << "  -g,--ngpus <1>           accepted for nccl-tests compatibility (must be 1)\n"
    << "  -h,--help                this text\n";
  return o.str();
}

ParseStatus parseArgs(int argc, char** argv, const ArgsSpec& spec, Args& args, std::string& error) {
  args.argv.assign(argv, argv + argc);
  if (argc > 0) {
    if (auto coll = collFromProgramName(argv[0])) args.coll = *coll;
  }
  static const option kLong[] = {
      {"collective", required_argument, nullptr, 't'},
      {"minbytes", required_argument, nullptr, 'b'},
      {"maxbytes", required_argument, nullptr, 'e'},
      {"stepfactor", required_argument, nullptr, 'f'},
      {"stepbytes", required_argument, nullptr, 'i'},
      {"iters", required_argument, nullptr, 'n'},
      {"warmup_iters", required_argument, nullptr, 'w'},
      {"check", required_argument, nullptr, 'c'},
      {"datatype", required_argument, nullptr, 'd'},
      {"op", required_argument, nullptr, 'o'},
      {"root", required_argument, nullptr, 'r'},
      {"average", required_argument, nullptr, 'a'},
      {"blocking", required_argument, nullptr, 'z'},
      {"algorithm", required_argument, nullptr, 'A'},
      {"repeats", required_argument, nullptr, 'K'},
      {"local_register", required_argument, nullptr, 'R'},
      {"output_file", required_argument, nullptr, 'J'},
      {"min_time", required_argument, nullptr, 'T'},
      {"hugepages", required_argument, nullptr, 'H'},
      {"ngpus", required_argument, nullptr, 'g'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  const std::string shortOpts =
      std::string("t:b:e:f:i:n:w:c:d:o:r:a:z:J:T:H:g:R:h") + (spec.algorithmFlag ? "A:K:" : "");
  bool factorGiven = false;
  bool stepGiven = false;
  optind = 1;
  opterr = 0;
  auto fail = [&](const std::string& what) {
    error = what;
    return ParseStatus::Error;
  };
  for (;;) {
    int longIndex = 0;
    const int c = getopt_long(argc, argv, shortOpts.c_str(), kLong, &longIndex);
    if (c == -1) break;
    const char* v = optarg;
    const std::string flag = std::string("-") + static_cast<char>(c);
    switch (c) {
      case 't': {
        auto coll = parseColl(v);
        if (!coll) return fail("unknown collective '" + std::string(v) + "'");
        args.coll = *coll;
        break;
      }
      case 'b':
      case 'e':
      case 'i': {
        auto size = parseSize(v);
        if (!size) return fail("bad size '" + std::string(v) + "' for " + flag);
        (c == 'b' ? args.minBytes : c == 'e' ? args.maxBytes : args.stepBytes) = *size;
        stepGiven |= c == 'i';
        break;
      }
      case 'f':
      case 'n':
      case 'w':
      case 'c':
      case 'r':
      case 'a':
      case 'z':
      case 'g':
      case 'H': {
        auto n = parseInt(v);
        if (!n) return fail("bad number '" + std::string(v) + "' for " + flag);
        if (c == 'f') {
          if (*n < 1) return fail("-f must be >= 1");
          args.stepFactor = static_cast<size_t>(*n);
          factorGiven = true;
        } else if (c == 'n' || c == 'w' || c == 'c') {
          if (*n < 0) return fail(flag + " must be >= 0");
          (c == 'n' ? args.iters : c == 'w' ? args.warmupIters : args.check) = static_cast<int>(*n);
        } else if (c == 'r') {
          args.root = static_cast<int>(*n);
        } else if (c == 'a') {
          if (*n < 0 || *n > 3) return fail("-a must be 0, 1, 2 or 3");
          args.average = static_cast<int>(*n);
        } else if (c == 'z') {
          args.blocking = true;  // non-blocking launches are not a mode here
        } else if (c == 'g') {
          if (*n != 1) return fail("one device per process: -g must be 1");
        } else {
          args.hugePages = *n != 0;
        }
        break;
      }
      case 'd':
      case 'o': {
        const std::string s(v);
        if (c == 'd') {
          args.types.clear();
          if (s == "all") {
            for (int t = 0; t < kNumTypes; ++t) args.types.push_back(static_cast<Type>(t));
          } else if (auto t = parseType(s)) {
            args.types.push_back(*t);
          } else {
            return fail("unknown data type '" + s + "'");
          }
        } else {
          args.ops.clear();
          if (s == "all") {
            for (int o = 0; o < kNumOps; ++o) args.ops.push_back(static_cast<Op>(o));
          } else if (auto o = parseOp(s)) {
            args.ops.push_back(*o);
          } else {
            return fail("unknown reduction op '" + s + "'");
          }
        }
        break;
      }
      case 'A':
        args.algorithm = v;
        break;
      case 'K': {
        auto n = parseInt(v);
        if (!n || *n < 1 || *n > 100) return fail("bad count '" + std::string(v) + "' for -K");
        args.repeats = static_cast<int>(*n);
        break;
      }
      case 'R': {  // nccl-tests' buffer registration
        auto n = parseInt(v);
        if (!n || *n < 0 || *n > 3) return fail("bad value '" + std::string(v) + "' for -R");
        args.registration = static_cast<int>(*n);
        break;
      }
      case 'J':
        args.jsonPath = v;
        break;
      case 'T': {
        auto ms = parseDouble(v);
        if (!ms || *ms < 0) return fail("bad time '" + std::string(v) + "' for -T");
        args.minTimeMs = *ms;
        break;
      }
      case 'h':
        return ParseStatus::Help;
      default:
        if (optopt == 'A' || (optind > 0 && std::string_view(argv[optind - 1]) == "-A")) {
          return fail("-A is not supported by " + std::string(spec.program));
        }
        return fail("unknown or incomplete option '" + std::string(argv[optind - 1]) + "'");
    }
  }
  if (optind < argc) return fail("unexpected argument '" + std::string(argv[optind]) + "'");
  if (stepGiven && !factorGiven) args.stepFactor = 1;
  if (args.stepFactor <= 1 && args.stepBytes == 0) return fail("-i must be > 0 without -f");
  if (args.minBytes > args.maxBytes) return fail("-b must not exceed -e");
  if (args.iters < 1) return fail("-n must be >= 1");
  return ParseStatus::Ok;
}

}  // namespace perf
