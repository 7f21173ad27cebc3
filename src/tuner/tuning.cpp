#include "tuner/tuning.hpp"

#include "errors.hpp"
#include "settings/settings.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace chorus {
namespace {

[[noreturn]] void bad(std::string_view name, int line, const std::string& what) {
  throw Error(Result::InvalidArgument,
              std::string(name) + ":" + std::to_string(line) + ": " + what);
}

std::optional<DataType> typeNamed(std::string_view name) {
  for (int t = 0; t < chorusNumTypes; ++t)
    if (name == toString(static_cast<DataType>(t))) return static_cast<DataType>(t);
  return std::nullopt;
}

std::string format(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

LinkModel Tuning::forType(DataType type) const {
  LinkModel m = model;
  const int t = static_cast<int>(type);
  if (t >= 0 && t < chorusNumTypes && reduceBytesPerUs[t] > 0)
    m.reduceBytesPerUs = reduceBytesPerUs[t];
  return m;
}

std::string Tuning::toLine() const {
  std::string s = std::string(toString(link)) + " ranks=" + std::to_string(ranks) +
                  " latency_us=" + format(model.latencyUs) +
                  " overhead_us=" + format(model.overheadUs) +
                  " bytes_per_us=" + format(model.bytesPerUs) +
                  " copy_bytes_per_us=" + format(model.copyBytesPerUs) +
                  " reduce_bytes_per_us=" + format(model.reduceBytesPerUs);
  if (model.transportBytesPerUs > 0)
    s += " transport_bytes_per_us=" + format(model.transportBytesPerUs);
  if (model.nicBytesPerUs > 0) s += " nic_bytes_per_us=" + format(model.nicBytesPerUs);
  if (model.nicBurstBytes > 0)  // bytes: whole, not %g's 1.25e+06
    s += " nic_burst_bytes=" + std::to_string(std::llround(model.nicBurstBytes));
  if (model.overheadShare > 0) s += " overhead_share=" + format(model.overheadShare);
  if (model.callShare > 0) s += " call_share=" + format(model.callShare);
  if (model.pairOverheadUs > 0) s += " pair_overhead_us=" + format(model.pairOverheadUs);
  if (model.pairOverheadShare > 0) s += " pair_overhead_share=" + format(model.pairOverheadShare);
  if (model.gapUs > 0) s += " gap_us=" + format(model.gapUs);
  if (model.cpuSends != defaultLinkModel(link).cpuSends)
    s += std::string(" cpu_sends=") + (model.cpuSends ? "1" : "0");
  if (!measuredBest.empty()) {
    s += " best=";
    for (size_t i = 0; i < measuredBest.size(); ++i)
      s += (i ? "," : "") + std::to_string(measuredBest[i].first) + ":" + measuredBest[i].second;
  }
  for (int t = 0; t < chorusNumTypes; ++t)
    if (reduceBytesPerUs[t] > 0)
      s += std::string(" reduce.") + toString(static_cast<DataType>(t)) + "=" +
           format(reduceBytesPerUs[t]);
  return s;
}

Tuning defaultTuning(LinkClass link) {
  Tuning t;
  t.link = link;
  t.model = defaultLinkModel(link);
  return t;
}

std::vector<Tuning> parseTuneFile(std::string_view text, std::string_view name) {
  std::vector<Tuning> entries;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::string word;
    if (!(fields >> word)) continue;
    auto link = parseLinkClass(word);
    if (!link) bad(name, number, "unknown link class '" + word + "' (shm, tcp, ib, ucx, nvlink)");
    Tuning t = defaultTuning(*link);
    t.source = std::string(name);
    while (fields >> word) {
      size_t eq = word.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == word.size())
        bad(name, number, "expected key=value, got '" + word + "'");
      std::string key = word.substr(0, eq), text = word.substr(eq + 1);
      if (key == "best") {  // 8:oneshot,512:rd
        for (const std::string& item : settings::splitList(text)) {
          size_t colon = item.find(':');
          char* stop = nullptr;
          const unsigned long long bytes =
              colon == std::string::npos ? 0 : std::strtoull(item.c_str(), &stop, 10);
          if (colon == std::string::npos || stop != item.c_str() + colon ||
              colon + 1 == item.size())
            bad(name, number, "'best' needs bytes:algorithm items, got '" + item + "'");
          t.measuredBest.emplace_back(bytes, item.substr(colon + 1));
        }
        continue;
      }
      char* end = nullptr;
      double v = std::strtod(text.c_str(), &end);
      if (*end != '\0' || !std::isfinite(v) || v < 0)
        bad(name, number, "'" + key + "' needs a finite number >= 0, got '" + text + "'");
      if (key == "ranks") {
        if (v != std::floor(v) || v > 1e6) bad(name, number, "ranks must be a whole number");
        t.ranks = static_cast<int>(v);
        continue;
      }
      if (key == "overhead_us") {
        t.model.overheadUs = v;
        continue;
      }
      if (key == "gap_us") {  // 0: no gap beyond o (LinkModel::gapUs)
        t.model.gapUs = v;
        continue;
      }
      if (key == "transport_bytes_per_us") {  // 0: no CPU cost per byte
        t.model.transportBytesPerUs = v;
        continue;
      }
      if (key == "nic_bytes_per_us") {  // 0: no NIC shared by a node's ranks
        t.model.nicBytesPerUs = v;
        continue;
      }
      if (key == "nic_burst_bytes") {  // 0: the NIC has no token bucket (LinkModel::nicBurstBytes)
        t.model.nicBurstBytes = v;
        continue;
      }
      if (key == "overhead_share" || key == "call_share" || key == "pair_overhead_share") {
        // 0: overhead_us as given
        if (v > 1) bad(name, number, "'" + key + "' is a share of a core: at most 1");
        (key == "call_share"            ? t.model.callShare
         : key == "pair_overhead_share" ? t.model.pairOverheadShare
                                        : t.model.overheadShare) = v;
        continue;
      }
      if (key == "pair_overhead_us") {  // 0: overhead_us is the pair's (LinkModel)
        t.model.pairOverheadUs = v;
        continue;
      }
      if (key == "cpu_sends") {  // absent: the link class's own (shm 1, the others 0)
        if (v != 0 && v != 1) bad(name, number, "cpu_sends must be 0 or 1");
        t.model.cpuSends = v == 1;
        continue;
      }
      if (v == 0) bad(name, number, "'" + key + "' must be > 0");
      if (key == "latency_us") {
        t.model.latencyUs = v;
      } else if (key == "bytes_per_us") {
        t.model.bytesPerUs = v;
      } else if (key == "copy_bytes_per_us") {
        t.model.copyBytesPerUs = v;
      } else if (key == "reduce_bytes_per_us") {
        t.model.reduceBytesPerUs = v;
      } else if (key.starts_with("reduce.")) {
        auto type = typeNamed(std::string_view(key).substr(7));
        if (!type) bad(name, number, "unknown data type in '" + key + "'");
        t.reduceBytesPerUs[static_cast<int>(*type)] = v;
      } else {
        bad(name, number, "unknown key '" + key + "'");
      }
    }
    entries.push_back(t);
  }
  return entries;
}

std::vector<Tuning> readTuneFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(Result::InvalidArgument, "cannot read tune file '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return parseTuneFile(text.str(), path);
}

void updateTuneFile(const std::string& path, const Tuning& tuning) {
  std::vector<Tuning> entries;
  if (std::ifstream probe(path); probe) entries = readTuneFile(path);
  std::erase_if(entries,
                [&](const Tuning& t) { return t.link == tuning.link && t.ranks == tuning.ranks; });
  entries.push_back(tuning);
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw Error(Result::InvalidArgument, "cannot write tune file '" + path + "'");
  out << "# Chorus tune file (chorus-perf --calibrate): link ranks=<local ranks> figures...\n";
  for (const Tuning& t : entries) out << t.toLine() << '\n';
  if (!out.flush()) throw Error(Result::SystemError, "writing tune file '" + path + "' failed");
}

std::optional<Tuning> pickTuning(const std::vector<Tuning>& entries, LinkClass link, int ranks) {
  const Tuning* best = nullptr;
  for (const Tuning& t : entries) {
    if (t.link != link) continue;
    auto distance = [&](const Tuning& e) { return std::abs(e.ranks - ranks); };
    if (!best || distance(t) < distance(*best) ||
        (distance(t) == distance(*best) && t.ranks < best->ranks))
      best = &t;
  }
  if (!best) return std::nullopt;
  return *best;
}

}  // namespace chorus
