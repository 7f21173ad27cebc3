// readEnvironment: who am I and where is the store, as chorus-run, torchrun or mpirun
// tell it. Under mpirun without an address, rank 0 publishes its store in a file in a
// private directory (so this path works only when every rank shares the host, and its
// store listens on loopback).
#include "bootstrap/bootstrap.hpp"

#include "errors.hpp"
#include "log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

namespace chorus {
namespace {

struct Var {
  std::string name, value;
};

// The first of `names` that is set and not empty.
std::optional<Var> pick(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (const char* v = std::getenv(n); v != nullptr && *v != '\0') return Var{n, v};
  return std::nullopt;
}

int64_t parseInt(const Var& v, int64_t min, int64_t max) {
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v.value.c_str(), &end, 10);
  if (errno != 0 || end == v.value.c_str() || *end != '\0')
    throwInvalid(v.name + "='" + v.value + "' is not an integer");
  if (x < min || x > max) {
    throwInvalid(v.name + "=" + v.value + " is out of range [" + std::to_string(min) + ", " +
                 std::to_string(max) + "]");
  }
  return x;
}

security::JobSecret parseSecret(const Var& v) { return security::JobSecret::fromHex(v.value, v.name); }

// No secret was handed out (torchrun): every rank derives the same one from what they all
// see. It only keeps jobs apart; it is no protection against a hostile process, so it is
// marked `derived` and the store then admits local peers of the job's uid only.
security::JobSecret derivedSecret(uint16_t port) {
  const char* run = std::getenv("TORCHELASTIC_RUN_ID");
  std::string text =
      std::string("chorus:") + (run && *run ? run : "chorus") + ":" + std::to_string(port);
  security::JobSecret s;
  s.bytes = security::hmacSha256(security::asBytes("chorus derived secret"),
                                 {security::asBytes(text)});
  s.derived = true;
  return s;
}

uint64_t bootTimeNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

// This process's start, in CLOCK_BOOTTIME nanoseconds (field 22 of /proc/self/stat).
uint64_t processStartNs() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  auto paren = line.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(line.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return std::stoull(field) * (1'000'000'000ull / uint64_t(::sysconf(_SC_CLK_TCK)));
  }
  return 0;
}

std::string rendezvousPath() {
  auto job = pick({"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid"});
  if (!job) {
    throwInvalid(
        "mpirun: no rendezvous address (CHORUS_ADDR/CHORUS_PORT or MASTER_ADDR/MASTER_PORT) and "
        "no MPI job id (OMPI_MCA_ess_base_jobid or PMIX_NAMESPACE) to key a file rendezvous");
  }
  std::string id;
  for (char c : job->value)
    id += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '_';
  return rendezvousDirectory() + "/" + id + ".rdv";
}

void publishRendezvous(const std::string& path, const Rendezvous& r, int nranks) {
  static std::mutex mutex;
  static std::string published;  // removed at exit: the file is useless once we are gone
  std::lock_guard lock(mutex);
  if (published.empty()) std::atexit([] { ::unlink(published.c_str()); });
  published = path;

  std::string text = "chorus-rendezvous 1\naddress " + r.store.toString() + "\nsecret " +
                     r.secret.hex() + "\nnranks " + std::to_string(nranks) + "\npid " +
                     std::to_string(::getpid()) + "\nwritten " + std::to_string(bootTimeNs()) +
                     "\n";
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  ::unlink(temp.c_str());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throwSystemError("mpirun rendezvous: cannot create " + temp);
  bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    ::unlink(temp.c_str());
    throwSystemError("mpirun rendezvous: cannot write " + path);
  }
}

// Reads rank 0's file if it is there, ours (same user, same job size) and fresh.
std::optional<Rendezvous> readRendezvous(const std::string& path, int nranks, uint64_t notBefore) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  bool mine = ::fstat(fd, &st) == 0 && st.st_uid == ::getuid();
  char buf[1024] = {};
  ssize_t n = mine ? ::read(fd, buf, sizeof(buf) - 1) : -1;
  ::close(fd);
  if (n <= 0) return std::nullopt;
  std::istringstream in(std::string(buf, size_t(n)));
  std::string key, address, secret;
  int version = 0, size = -1;
  uint64_t written = 0;
  in >> key >> version;
  if (key != "chorus-rendezvous" || version != 1) return std::nullopt;
  while (in >> key) {
    if (key == "address")
      in >> address;
    else if (key == "secret")
      in >> secret;
    else if (key == "nranks")
      in >> size;
    else if (key == "written")
      in >> written;
    else
      in >> key;  // pid, or a field from a later version
  }
  auto colon = address.rfind(':');
  if (size != nranks || written < notBefore || colon == std::string::npos || secret.empty())
    return std::nullopt;  // another job's, or left from an earlier run
  Rendezvous r;
  r.store = net::SocketAddress::parse(address.substr(0, colon),
                                      uint16_t(std::stoul(address.substr(colon + 1))));
  try {
    r.secret = parseSecret({"secret in " + path, secret});
  } catch (const Error&) {
    return std::nullopt;  // not ours after all
  }
  return r;
}

Rendezvous fileRendezvous(int rank, int nranks, Deadline deadline) {
  std::string path = rendezvousPath();
  if (rank == 0) {
    // Only this uid can write in the directory: what is there is a stale file of ours.
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      throwSystemError("mpirun rendezvous: cannot remove the stale " + path);
    Rendezvous r = startProcessStore(0, true);
    publishRendezvous(path, r, nranks);
    return r;
  }
  // Ranks start within seconds of each other; a file written long before we started is
  // left from an earlier job with the same id.
  constexpr uint64_t kSkewNs = 60'000'000'000ull;
  uint64_t start = processStartNs();
  uint64_t notBefore = start > kSkewNs ? start - kSkewNs : 0;
  auto pause = std::chrono::milliseconds(5);
  for (;;) {
    if (auto r = readRendezvous(path, nranks, notBefore)) return *r;
    auto now = Clock::now();
    if (now >= deadline) {
      throw Error(Result::Timeout,
                  "mpirun rank " + std::to_string(rank) + ": rank 0 did not publish " + path +
                      " in time. The file rendezvous works only when all ranks share a host; "
                      "otherwise set CHORUS_ADDR and CHORUS_PORT (or MASTER_ADDR and "
                      "MASTER_PORT) for every rank");
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

}  // namespace

EnvLaunch readEnvironment(Deadline deadline) {
  EnvLaunch launch;
  std::optional<Var> rank = pick({"CHORUS_RANK", "RANK"});
  std::optional<Var> size, local;
  if (rank) {
    launch.source = rank->name == "CHORUS_RANK" ? "chorus" : "torchrun";
    size = pick({"CHORUS_WORLD_SIZE", "WORLD_SIZE"});
    local = pick({"CHORUS_LOCAL_RANK", "LOCAL_RANK"});
    if (!size) throwInvalid(rank->name + " is set but neither CHORUS_WORLD_SIZE nor WORLD_SIZE is");
  } else if ((rank = pick({"OMPI_COMM_WORLD_RANK"}))) {
    launch.source = "mpirun";
    size = pick({"CHORUS_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"});
    local = pick({"CHORUS_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"});
    if (!size) throwInvalid("OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not");
  } else {
    throwInvalid(
        "no launch environment: set CHORUS_RANK, CHORUS_WORLD_SIZE, CHORUS_ADDR and CHORUS_PORT "
        "(or RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT), or start the program with "
        "chorus-run, torchrun or mpirun");
  }
  launch.nranks = int(parseInt(*size, 1, 1 << 30));
  launch.rank = int(parseInt(*rank, 0, 1 << 30));
  if (launch.rank >= launch.nranks) {
    throwInvalid(rank->name + "=" + rank->value + " is not below " + size->name + "=" +
                 size->value);
  }
  launch.localRank = local ? int(parseInt(*local, 0, launch.nranks - 1)) : 0;

  auto addr = pick({"CHORUS_ADDR", "MASTER_ADDR"});
  auto port = pick({"CHORUS_PORT", "MASTER_PORT"});
  auto secret = pick({"CHORUS_SECRET"});
  auto jobSecret = pick({"CHORUS_JOB_SECRET"});
  if (!addr) {
    if (port) throwInvalid(port->name + " is set but neither CHORUS_ADDR nor MASTER_ADDR is");
    if (secret) throwInvalid("CHORUS_SECRET is set but neither CHORUS_ADDR nor MASTER_ADDR is");
    if (launch.source == "mpirun") {
      launch.rendezvous = fileRendezvous(launch.rank, launch.nranks, deadline);
    } else if (launch.nranks == 1) {
      launch.rendezvous = startProcessStore(0, true);  // alone: our own store, already running
    } else {
      throwInvalid(rank->name + " and " + size->name +
                   " are set but the rendezvous address is not: set CHORUS_ADDR and "
                   "CHORUS_PORT (or MASTER_ADDR and MASTER_PORT)");
    }
    return launch;
  }
  if (!port) throwInvalid(addr->name + " is set but neither CHORUS_PORT nor MASTER_PORT is");
  auto portNumber = static_cast<uint16_t>(parseInt(*port, 1, 65535));
  try {
    launch.rendezvous.store = net::SocketAddress::parse(addr->value, portNumber);
  } catch (const Error& e) {
    throwInvalid(addr->name + ": " + e.what());
  }
  if (secret) {
    launch.rendezvous.secret = parseSecret(*secret);  // the launcher runs the store
  } else if (jobSecret) {
    launch.rendezvous.secret = security::JobSecret::fromPassphrase(jobSecret->value);
    launch.hostsStore = launch.rank == 0;
  } else {
    logf(LogLevel::Info,
         "no CHORUS_JOB_SECRET: the job secret is derived from the port and run id, and the "
         "store admits local connections of this uid only; set CHORUS_JOB_SECRET on every "
         "rank to keep strangers on other hosts out too");
    launch.rendezvous.secret = derivedSecret(portNumber);
    launch.hostsStore = launch.rank == 0;
  }
  return launch;
}

}  // namespace chorus
