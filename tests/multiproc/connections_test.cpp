// chorus_connections_test: tcp connects lazily. After a ring all-reduce each rank holds
// tcp connections to exactly its two ring neighbours (not a full mesh); after an
// all-to-all, to every other rank. Which rank is at the other end of a socket is found
// without Chorus: the socket's endpoints in /proc/net/tcp, the process holding the other
// end (its /proc/<pid>/fd), and that process's CHORUS_RANK (chorus-run's children).
//   chorus-run -n 8 chorus_connections_test
// With CHORUS_TUNE_PROBE=1, right after creation each rank holds connections to exactly the
// other ranks of its tuning-probe block (8 ranks), not a full mesh.
// Exit 0 when every check holds; 1 on a wrong peer set or a wrong sum; 3 on an error.
#include <chorus/chorus.hpp>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

// Socket inodes a process holds.
std::set<std::string> socketInodes(const std::string& pid) {
  std::set<std::string> inodes;
  const std::string dir = "/proc/" + pid + "/fd";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      char target[64] = {};
      std::string path = dir + "/" + e->d_name;
      ssize_t n = readlink(path.c_str(), target, sizeof target - 1);
      std::string t(target, n > 0 ? size_t(n) : 0);
      if (t.starts_with("socket:[")) inodes.insert(t.substr(8, t.size() - 9));
    }
    closedir(d);
  }
  return inodes;
}

struct Row {
  std::string local, remote, state;
};

// Every TCP socket of this network namespace, by inode.
std::map<std::string, Row> tcpTable() {
  std::map<std::string, Row> rows;
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      rows[inode] = {local, remote, state};
    }
  }
  return rows;
}

// The ranks of chorus-run's children (this job), by pid.
std::map<std::string, int> siblingRanks() {
  std::map<std::string, int> ranks;
  const std::string parent = std::to_string(getppid());
  std::ifstream children("/proc/" + parent + "/task/" + parent + "/children");
  for (std::string pid; children >> pid;) {
    std::ifstream env("/proc/" + pid + "/environ", std::ios::binary);
    for (std::string var; std::getline(env, var, '\0');)
      if (var.starts_with("CHORUS_RANK=")) ranks[pid] = std::atoi(var.c_str() + 12);
  }
  return ranks;
}

int portOf(const std::string& endpoint) {  // "0100007F:1F90"
  return static_cast<int>(
      std::strtol(endpoint.substr(endpoint.find(':') + 1).c_str(), nullptr, 16));
}

// The ranks this process holds established TCP connections to, the store's left out.
std::set<int> connectedRanks() {
  const char* p = std::getenv("CHORUS_PORT");
  const int storePort = p ? std::atoi(p) : -1;
  const auto table = tcpTable();
  const auto ranks = siblingRanks();
  std::map<std::string, std::set<std::string>> held;
  for (const auto& [pid, rank] : ranks) held[pid] = socketInodes(pid);
  std::set<int> peers;
  for (const std::string& inode : socketInodes("self")) {
    auto mine = table.find(inode);
    if (mine == table.end() || mine->second.state != "01") continue;  // 01: ESTABLISHED
    const Row& m = mine->second;
    if (portOf(m.local) == storePort || portOf(m.remote) == storePort) continue;
    for (const auto& [otherInode, row] : table) {
      if (row.local != m.remote || row.remote != m.local) continue;
      for (const auto& [pid, inodes] : held)
        if (inodes.count(otherInode)) peers.insert(ranks.at(pid));
    }
  }
  return peers;
}

std::string text(const std::set<int>& s) {
  std::string t = "{";
  for (int r : s) t += (t.size() > 1 ? "," : "") + std::to_string(r);
  return t + "}";
}

}  // namespace

int main() {
  try {
    chorus::Options options;
    options.transport = "tcp";
    auto comm = chorus::Communicator::initFromEnv(options);
    comm.setAlgorithm("ring");
    const int r = comm.rank(), n = comm.size();
    int failures = 0;
    // With the tuning probe on (one node, so local index = rank): after creation, exactly
    // the peers of the probe's exchange, aligned blocks of 8 ranks, not all n - 1.
    const char* probeSetting = std::getenv("CHORUS_TUNE_PROBE");
    const bool probed = probeSetting && std::string(probeSetting) != "0";
    if (probed) {
      std::set<int> block;
      for (int q = r - r % 8; q < std::min(n, r - r % 8 + 8); ++q)
        if (q != r) block.insert(q);
      const std::set<int> afterCreate = connectedRanks();
      if (afterCreate != block) {
        std::printf("rank %d: after creation with the probe connected to %s, want %s\n", r,
                    text(afterCreate).c_str(), text(block).c_str());
        ++failures;
      }
    }
    // A ring all-reduce (checked), which also keeps every rank here until all have run it.
    auto ringSum = [&](int64_t mine) {
      const size_t count = 1 << 16;
      std::vector<int64_t> in(count, mine), out(count, -1);
      for (size_t i = 0; i < count; ++i) in[i] = mine * 1000 + int64_t(i);
      comm.allReduce(in.data(), out.data(), count, chorus::DataType::Int64, chorus::RedOp::Sum)
          .wait();
      return out;
    };
    auto out = ringSum(r);
    for (size_t i = 0; i < out.size(); ++i)
      failures += out[i] != int64_t(n) * (n - 1) / 2 * 1000 + int64_t(n) * int64_t(i);
    const std::set<int> afterRing = connectedRanks();
    const std::set<int> neighbours = {(r + 1) % n, (r + n - 1) % n};
    if (!probed && afterRing != neighbours) {  // the probe's connections stay open
      std::printf("rank %d: after a ring all-reduce connected to %s, want %s\n", r,
                  text(afterRing).c_str(), text(neighbours).c_str());
      ++failures;
    }
    ringSum(failures);  // every rank has looked before anyone goes on

    const size_t per = 64;
    std::vector<int64_t> in(per * n), got(per * n, -1);
    for (size_t i = 0; i < in.size(); ++i) in[i] = r * 100000 + int64_t(i);
    comm.allToAll(in.data(), got.data(), per, chorus::DataType::Int64).wait();
    for (size_t i = 0; i < got.size(); ++i)
      failures += got[i] != int64_t(i / per) * 100000 + int64_t(r * per + i % per);
    const std::set<int> afterAll = connectedRanks();
    std::set<int> everyone;
    for (int q = 0; q < n; ++q)
      if (q != r) everyone.insert(q);
    if (afterAll != everyone) {
      std::printf("rank %d: after an all-to-all connected to %s, want %s\n", r,
                  text(afterAll).c_str(), text(everyone).c_str());
      ++failures;
    }
    ringSum(failures);
    std::printf("rank %d: %s (ring neighbours %s)\n", r, failures ? "FAIL" : "OK",
                text(afterRing).c_str());
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::printf("rank ?: ERROR %s\n", e.what());
    return 3;
  }
}
