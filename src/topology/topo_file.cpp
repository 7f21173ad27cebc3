// The topology file (CHORUS_TOPO_FILE): describes what the probe cannot see or gets wrong.
//
//   # comment; one statement per line, tokens separated by blanks
//   version 1                          optional
//   node NAME ranks LIST               these ranks form node NAME; LIST: 0-3,8,10-11
//   node NAME hosts HOST...            ranks on these hosts (hostname or host id) form NAME
//   nic NAME [speed RATE] [numa N] [state up|down] [rdma DEV] [pci BUSID] [host HOSTNAME]
//                                      completes NIC NAME (added if not found); with host,
//                                      only on that host. RATE: 100G, 25Gbit, 400Gb/s, 800M,
//                                      or a bare number of Mbit/s
//   gpu INDEX [name NAME] [numa N] [pci BUSID]
//   link GPU_A GPU_B KIND [GB/S]       a GPU link: nvlink, xgmi, pcie...; bandwidth in GB/s
//
// Example: tests/data/topology/cluster.topo. Any error names the file and line; nothing in
// the input can crash the parser (bounded numbers, bounded rank ranges).
#include "errors.hpp"
#include "topology/topology.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

namespace chorus::topo {
namespace {

constexpr int64_t kMaxRank = 1 << 20;  // ranks a file may list in all

class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& msg) const {
    throwInvalid(source_ + ":" + std::to_string(line_) + ": " + msg);
  }

  TopologyFile parse(std::string_view text) {
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      ++line_;
      statement(text.substr(start, end - start));
      start = end + 1;
    }
    return std::move(file_);
  }

 private:
  void statement(std::string_view raw) {
    if (auto hash = raw.find('#'); hash != std::string_view::npos) raw = raw.substr(0, hash);
    std::istringstream in{std::string(raw)};
    tokens_.clear();
    for (std::string tok; in >> tok;) tokens_.push_back(tok);
    next_ = 0;
    if (tokens_.empty()) return;
    std::string kw = take("a statement");
    if (kw == "version") {
      if (integer(take("a version number"), 0, 1000) != 1) fail("only version 1 is known");
    } else if (kw == "node") {
      node();
    } else if (kw == "nic") {
      nic();
    } else if (kw == "gpu") {
      gpu();
    } else if (kw == "link") {
      link();
    } else {
      fail("unknown statement '" + kw + "' (expected version, node, nic, gpu or link)");
    }
    if (next_ < tokens_.size()) fail("unexpected '" + tokens_[next_] + "' at the end of the line");
  }

  std::string take(const std::string& what) {
    if (next_ >= tokens_.size()) fail("missing " + what);
    return tokens_[next_++];
  }

  int64_t integer(const std::string& s, int64_t min, int64_t max) {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno != 0 || end == s.c_str() || *end != '\0') fail("'" + s + "' is not an integer");
    if (v < min || v > max) {
      fail("'" + s + "' is out of range [" + std::to_string(min) + ", " + std::to_string(max) +
           "]");
    }
    return v;
  }

  // A non-negative number and the unit after it ("400Gb/s" -> 400, "Gb/s").
  std::pair<double, std::string> decimal(const std::string& s, const std::string& what) {
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (errno != 0 || end == s.c_str() || !(v >= 0) || v > 1e9)
      fail("bad " + what + " '" + s + "'");
    return {v, end};
  }

  // 100G, 25Gbit, 400Gb/s, 800M, 1.5T or a bare number (Mbit/s) -> Mbit/s.
  int64_t rate(const std::string& s) {
    auto [v, unit] = decimal(s, "speed");
    for (char& c : unit) c = char(std::tolower(static_cast<unsigned char>(c)));
    double scale = 1;
    if (!unit.empty()) {
      scale = unit[0] == 'k'   ? 1e-3
              : unit[0] == 'm' ? 1
              : unit[0] == 'g' ? 1e3
              : unit[0] == 't' ? 1e6
                               : 0;
      unit.erase(0, 1);
    }
    if (scale == 0 ||
        !(unit.empty() || unit == "b" || unit == "bit" || unit == "bps" || unit == "b/s"))
      fail("bad speed '" + s + "' (examples: 100G, 25Gbit, 400Gb/s, 800M, or Mbit/s)");
    if (v * scale < 1) fail("speed '" + s + "' is below 1 Mbit/s");
    return int64_t(v * scale);
  }

  std::vector<int> rankList(const std::string& s) {
    std::vector<int> ranks;
    std::istringstream in(s);
    for (std::string part; std::getline(in, part, ',');) {
      auto dash = part.find('-');
      int64_t lo = integer(part.substr(0, dash), 0, kMaxRank);
      int64_t hi = dash == std::string::npos ? lo : integer(part.substr(dash + 1), 0, kMaxRank);
      if (hi < lo) fail("empty rank range '" + part + "'");
      if ((ranksListed_ += hi - lo + 1) > kMaxRank) fail("more than 2^20 ranks listed");
      for (int64_t r = lo; r <= hi; ++r) ranks.push_back(int(r));
    }
    if (ranks.empty() || s.back() == ',') fail("bad rank list '" + s + "'");
    return ranks;
  }

  void node() {
    NodeRule rule;
    rule.name = take("a node name");
    if (!names_.insert(rule.name).second) fail("node '" + rule.name + "' is defined twice");
    std::string kind = take("'ranks' or 'hosts'");
    if (kind == "ranks") {
      rule.ranks = rankList(take("a rank list"));
      for (int r : rule.ranks) {
        if (ranksSeen_[r]) fail("rank " + std::to_string(r) + " is in two nodes");
        ranksSeen_[r] = true;
      }
    } else if (kind == "hosts") {
      while (next_ < tokens_.size()) rule.hosts.push_back(tokens_[next_++]);
      if (rule.hosts.empty()) fail("node " + rule.name + ": missing host names");
    } else {
      fail("node " + rule.name + ": expected 'ranks' or 'hosts', not '" + kind + "'");
    }
    file_.nodes.push_back(std::move(rule));
  }

  void nic() {
    NicRule rule;
    rule.name = take("a NIC name");
    while (next_ < tokens_.size()) {
      std::string key = tokens_[next_++];
      std::string value = take("a value for '" + key + "'");
      if (key == "speed") {
        rule.speedMbps = rate(value);
      } else if (key == "numa") {
        rule.numaNode = int(integer(value, -1, 4095));
      } else if (key == "state") {
        if (value != "up" && value != "down") fail("state must be up or down, not '" + value + "'");
        rule.up = value == "up";
      } else if (key == "rdma") {
        rule.rdmaDevice = value;
      } else if (key == "pci") {
        rule.pciBusId = value;
      } else if (key == "host") {
        rule.host = value;
      } else {
        fail("nic " + rule.name + ": unknown attribute '" + key +
             "' (expected speed, numa, state, rdma, pci or host)");
      }
    }
    file_.nics.push_back(std::move(rule));
  }

  void gpu() {
    Gpu g;
    g.index = int(integer(take("a GPU index"), 0, 4095));
    while (next_ < tokens_.size()) {
      std::string key = tokens_[next_++];
      std::string value = take("a value for '" + key + "'");
      if (key == "name") {
        g.name = value;
      } else if (key == "numa") {
        g.numaNode = int(integer(value, -1, 4095));
      } else if (key == "pci") {
        g.pciBusId = value;
      } else {
        fail("gpu " + std::to_string(g.index) + ": unknown attribute '" + key +
             "' (expected name, numa or pci)");
      }
    }
    file_.gpus.push_back(std::move(g));
  }

  void link() {
    GpuLink l;
    l.a = int(integer(take("the first GPU index"), 0, 4095));
    l.b = int(integer(take("the second GPU index"), 0, 4095));
    if (l.a == l.b) fail("a link joins two different GPUs");
    l.kind = take("the link kind (nvlink, xgmi, pcie...)");
    if (next_ < tokens_.size()) {
      std::string bw = tokens_[next_++];
      std::string unit;
      std::tie(l.gbytesPerSec, unit) = decimal(bw, "bandwidth");
      if (!unit.empty() && unit != "GB/s" && unit != "G")
        fail("bandwidth is in GB/s, not '" + bw + "'");
    }
    file_.gpuLinks.push_back(std::move(l));
  }

  std::string source_;
  int line_ = 0;
  std::vector<std::string> tokens_;
  size_t next_ = 0;
  std::set<std::string> names_;
  std::vector<bool> ranksSeen_ = std::vector<bool>(kMaxRank + 1);
  int64_t ranksListed_ = 0;
  TopologyFile file_;
};

}  // namespace

TopologyFile parseTopologyFile(std::string_view text, const std::string& source) {
  return Parser(source).parse(text);
}

TopologyFile loadTopologyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throwInvalid("topology file " + path + ": cannot open it");
  std::ostringstream text;
  text << in.rdbuf();
  return parseTopologyFile(text.str(), path);
}

void applyTopologyFile(Topology& t, const TopologyFile& file) {
  for (const NicRule& r : file.nics) {
    if (!r.host.empty() && r.host != t.hostname) continue;
    auto it =
        std::find_if(t.nics.begin(), t.nics.end(), [&](const Nic& n) { return n.name == r.name; });
    if (it == t.nics.end()) {
      t.nics.emplace_back().name = r.name;
      it = t.nics.end() - 1;
      it->up = true;  // described by hand: assume it works unless the file says otherwise
    }
    if (r.speedMbps) it->speedMbps = *r.speedMbps;
    if (r.numaNode) it->numaNode = *r.numaNode;
    if (r.up) it->up = *r.up;
    if (r.rdmaDevice) it->rdmaDevice = *r.rdmaDevice;
    if (r.pciBusId) it->pciBusId = *r.pciBusId;
  }
  for (const Gpu& g : file.gpus) {  // completes a detected GPU, or adds one
    auto it = std::find_if(t.gpus.begin(), t.gpus.end(),
                           [&](const Gpu& x) { return x.index == g.index; });
    if (it == t.gpus.end()) {
      t.gpus.push_back(g);
      it = t.gpus.end() - 1;
      if (it->name.empty()) it->name = "gpu" + std::to_string(g.index);
      continue;
    }
    if (!g.name.empty()) it->name = g.name;
    if (g.numaNode >= 0) it->numaNode = g.numaNode;
    if (!g.pciBusId.empty()) it->pciBusId = g.pciBusId;
  }
  for (const GpuLink& l : file.gpuLinks) {
    auto it = std::find_if(t.gpuLinks.begin(), t.gpuLinks.end(), [&](const GpuLink& x) {
      return std::min(x.a, x.b) == std::min(l.a, l.b) && std::max(x.a, x.b) == std::max(l.a, l.b);
    });
    if (it == t.gpuLinks.end()) {
      t.gpuLinks.push_back(l);
    } else {
      *it = l;
    }
  }
}

}  // namespace chorus::topo
