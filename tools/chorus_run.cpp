// chorus-run: starts N ranks of a program on this host around a rendezvous store, forwards
// signals, and when one rank fails gives the others a grace period before killing them.
//
//   chorus-run -n N [--timeout SEC] [--tag-output] [--max-restarts K] prog args...
//
// Each rank runs in its own process group (so a kill reaches its helpers too), with stdin
// from /dev/null and a parent-death signal, so that no rank outlives the launcher.
#include "bootstrap/bootstrap.hpp"
#include "settings/settings.hpp"
#include "store/store.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kUsage =
    "usage: chorus-run -n N [--timeout SEC] [--tag-output] [--max-restarts K] [--respawn K]\n"
    "                  prog [args...]\n"
    "  -n N             number of ranks to start on this host\n"
    "  --timeout SEC    kill every rank after SEC seconds (exit status 124), per launch\n"
    "  --tag-output     prefix each line of output with [rank]\n"
    "  --max-restarts K when a rank fails, start the whole job again, up to K times, with\n"
    "                   CHORUS_RESTART_COUNT=1..K and a fresh rendezvous (not after a\n"
    "                   timeout or a signal to chorus-run)\n"
    "  --respawn K      when a rank fails, start a replacement of that rank alone, up to K\n"
    "                   times in all, with CHORUS_REJOIN=<epoch> (1 for its first\n"
    "                   replacement), into the same rendezvous: the others carry on and\n"
    "                   admit it with Communicator::grow (it calls joinFromEnv)\n"
    "Each rank gets CHORUS_RANK, CHORUS_WORLD_SIZE, CHORUS_LOCAL_RANK, CHORUS_LOCAL_SIZE,\n"
    "CHORUS_ADDR, CHORUS_PORT and CHORUS_SECRET. When a rank fails the others get\n"
    "CHORUS_RUN_GRACE seconds (default 15) to finish before they are killed.\n";

[[noreturn]] void usage(const std::string& message) {
  std::fprintf(stderr, "chorus-run: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

double parseSeconds(const std::string& what, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= 0) || v > 1e9)
    usage(what + " wants a number of seconds, not '" + text + "'");
  return v;
}

struct Options {
  int n = 0;
  double timeout = 0;  // 0: none
  bool tagOutput = false;
  int maxRestarts = 0;
  int respawns = 0;
  std::vector<std::string> command;
};

Options parseArgs(int argc, char** argv) {
  Options o;
  int i = 1;
  auto value = [&](const std::string& flag) -> std::string {
    if (i + 1 >= argc) usage(flag + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "-n" || a == "-np" || a == "--np") {
      std::string v = value(a);
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 1 || n > 65536)
        usage("-n wants a rank count from 1 to 65536, not '" + v + "'");
      o.n = int(n);
    } else if (a == "--timeout") {
      o.timeout = parseSeconds("--timeout", value(a));
    } else if (a.rfind("--timeout=", 0) == 0) {
      o.timeout = parseSeconds("--timeout", a.substr(10));
    } else if (a == "--max-restarts" || a.rfind("--max-restarts=", 0) == 0) {
      std::string v = a == "--max-restarts" ? value(a) : a.substr(15);
      char* end = nullptr;
      long k = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || k < 0 || k > 1000000)
        usage("--max-restarts wants a count of restarts, not '" + v + "'");
      o.maxRestarts = int(k);
    } else if (a == "--respawn" || a.rfind("--respawn=", 0) == 0) {
      std::string v = a == "--respawn" ? value(a) : a.substr(10);
      char* end = nullptr;
      long k = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || k < 0 || k > 1000000)
        usage("--respawn wants a count of replacements, not '" + v + "'");
      o.respawns = int(k);
    } else if (a == "--tag-output") {
      o.tagOutput = true;
    } else {
      usage("unknown option '" + a + "'");
    }
  }
  if (o.n == 0) usage("the number of ranks (-n N) is required");
  if (i >= argc) usage("no program to run");
  o.command.assign(argv + i, argv + argc);
  return o;
}

// PATH lookup done before forking, so that the child only makes async-signal-safe calls.
std::string resolve(const std::string& program) {
  auto runnable = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos) return runnable(program) ? program : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t pos = 0; pos <= dirs.size();) {
    size_t colon = std::min(dirs.find(':', pos), dirs.size());
    std::string dir = dirs.substr(pos, colon - pos);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (runnable(candidate)) return candidate;
    pos = colon + 1;
  }
  return "";
}

std::string signalName(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

void writeAll(int fd, const std::string& s) {
  for (size_t done = 0; done < s.size();) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // our own output is gone (EPIPE): nothing better to do
    done += size_t(n);
  }
}

struct Rank {
  int index = 0;
  pid_t pid = -1;
  bool running = false;
  int status = 0;
  bool killed = false;    // by us
  int epoch = 0;          // replacements of this rank so far (CHORUS_REJOIN)
  int out[2] = {-1, -1};  // read ends of stdout/stderr pipes under --tag-output
  std::string pending[2];
};

class Launcher {
 public:
  Launcher(Options options, double grace, int restart)
      : o_(std::move(options)), grace_(grace), restart_(restart) {}
  int run();
  // Whether chorus-run was told to stop (a signal) or timed out: no restart then.
  bool stopped() const { return timedOut_ || interrupted_; }

 private:
  void start(const std::string& program, sigset_t oldMask);
  void spawn(Rank& r);  // starts (or restarts) one rank
  void reap();
  void killAll(int sig);
  void pumpOutput(Rank& r, int which);
  bool anyOutputOpen() const;
  int finish();

  Options o_;
  double grace_;
  int restart_;
  std::unique_ptr<chorus::TcpStoreServer> server_;  // a fresh one per launch
  bool interrupted_ = false;
  std::string reportDir_;
  std::string collectReports();
  std::vector<Rank> ranks_;
  std::vector<int> failureOrder_;
  int live_ = 0;
  bool timedOut_ = false;
  bool killingAll_ = false;  // no grace period any more
  int respawned_ = 0;        // --respawn replacements started
  // What spawn() needs, set by start().
  std::string program_;
  sigset_t oldMask_{};
  std::vector<std::string> base_;
  std::string hex_;
  pid_t parent_ = 0;
  Clock::time_point graceAt_ = Clock::time_point::max();
};

void Launcher::start(const std::string& program, sigset_t oldMask) {
  const auto secret = chorus::security::JobSecret::random();
  server_ = std::make_unique<chorus::TcpStoreServer>(
      chorus::net::SocketAddress::parse("127.0.0.1", 0), secret, -1);
  // Our variables replace any inherited ones of the same name.
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    if (name != "CHORUS_RANK" && name != "CHORUS_WORLD_SIZE" && name != "CHORUS_LOCAL_RANK" &&
        name != "CHORUS_LOCAL_SIZE" && name != "CHORUS_ADDR" && name != "CHORUS_PORT" &&
        name != "CHORUS_SECRET" && name != "CHORUS_REPORT_DIR" && name != "CHORUS_RESTART_COUNT" &&
        name != "CHORUS_REJOIN")
      base_.push_back(std::move(entry));
  }
  // Ranks leave their failure there (CommImpl::reportFailure); finish() prints them.
  char dir[] = "/tmp/chorus-run-XXXXXX";
  if (::mkdtemp(dir)) reportDir_ = dir;
  hex_ = secret.hex();
  program_ = program;
  oldMask_ = oldMask;
  parent_ = ::getpid();
  ranks_.resize(size_t(o_.n));
  for (int i = 0; i < o_.n; ++i) {
    ranks_[size_t(i)].index = i;
    spawn(ranks_[size_t(i)]);
  }
}

void Launcher::spawn(Rank& r) {
  const int i = r.index;
  std::vector<char*> argv;
  for (auto& a : o_.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env = base_;
  env.push_back("CHORUS_RANK=" + std::to_string(i));
  env.push_back("CHORUS_WORLD_SIZE=" + std::to_string(o_.n));
  env.push_back("CHORUS_LOCAL_RANK=" + std::to_string(i));
  env.push_back("CHORUS_LOCAL_SIZE=" + std::to_string(o_.n));
  env.push_back("CHORUS_ADDR=127.0.0.1");
  env.push_back("CHORUS_PORT=" + std::to_string(server_->address().port()));
  env.push_back("CHORUS_SECRET=" + hex_);
  env.push_back("CHORUS_RESTART_COUNT=" + std::to_string(restart_));
  if (r.epoch > 0) env.push_back("CHORUS_REJOIN=" + std::to_string(r.epoch));
  if (!reportDir_.empty()) env.push_back("CHORUS_REPORT_DIR=" + reportDir_);
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int pipes[2][2] = {{-1, -1}, {-1, -1}};
  if (o_.tagOutput) {
    for (auto& p : pipes)
      if (::pipe2(p, O_CLOEXEC) != 0) {
        std::perror("chorus-run: pipe");
        std::exit(1);
      }
  }
  const pid_t parent = parent_;
  const char* program = program_.c_str();
  pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("chorus-run: fork");
    killAll(SIGKILL);
    std::exit(1);
  }
  if (pid == 0) {  // child: async-signal-safe calls only
    ::sigprocmask(SIG_SETMASK, &oldMask_, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    if (o_.tagOutput) ::dup2(pipes[0][1], 1), ::dup2(pipes[1][1], 2);
    ::execve(program, argv.data(), envp.data());
    const char msg[] = "chorus-run: exec failed\n";
    (void)!::write(2, msg, sizeof(msg) - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so that a kill right away reaches the group
  r.pid = pid;
  r.running = true;
  r.killed = false;
  ++live_;
  if (o_.tagOutput) {
    for (int k = 0; k < 2; ++k) {
      ::close(pipes[k][1]);
      if (r.out[k] >= 0) ::close(r.out[k]);  // the predecessor's: a helper may hold it open
      r.out[k] = pipes[k][0];
    }
  }
}

void Launcher::killAll(int sig) {
  killingAll_ = killingAll_ || sig == SIGKILL;
  for (auto& r : ranks_) {
    if (!r.running) continue;
    r.killed = r.killed || sig == SIGKILL;
    if (::kill(-r.pid, sig) != 0) ::kill(r.pid, sig);
  }
}

void Launcher::reap() {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    auto it = std::find_if(ranks_.begin(), ranks_.end(), [&](auto& r) { return r.pid == pid; });
    if (it == ranks_.end()) continue;
    it->running = false;
    it->status = status;
    --live_;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    if (respawned_ < o_.respawns && !it->killed && !killingAll_ && !interrupted_ && !timedOut_) {
      ++respawned_;
      ++it->epoch;
      const std::string how = WIFEXITED(status)
                                  ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                  : "killed by signal " + signalName(WTERMSIG(status));
      writeAll(2, "chorus-run: rank " + std::to_string(it->index) + " (pid " + std::to_string(pid) +
                      ") " + how + "; starting a replacement (CHORUS_REJOIN=" +
                      std::to_string(it->epoch) + ", respawn " + std::to_string(respawned_) +
                      " of " + std::to_string(o_.respawns) + ")\n");
      spawn(*it);
      continue;
    }
    failureOrder_.push_back(it->index);
    std::string how = WIFEXITED(status)
                          ? "exited with status " + std::to_string(WEXITSTATUS(status))
                          : "killed by signal " + signalName(WTERMSIG(status));
    if (it->killed) how += " (killed by chorus-run)";
    writeAll(2, "chorus-run: rank " + std::to_string(it->index) + " (pid " + std::to_string(pid) +
                    ") " + how + "\n");
    if (graceAt_ == Clock::time_point::max() && live_ > 0 && !killingAll_) {
      graceAt_ = Clock::now() +
                 std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_));
      char buf[160];
      std::snprintf(buf, sizeof(buf),
                    "chorus-run: giving the %d other rank%s %gs to finish (CHORUS_RUN_GRACE)\n",
                    live_, live_ == 1 ? "" : "s", grace_);
      writeAll(2, buf);
    }
  }
}

void Launcher::pumpOutput(Rank& r, int which) {
  char buf[65536];
  ssize_t n = ::read(r.out[which], buf, sizeof(buf));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  std::string& pending = r.pending[which];
  if (n > 0) pending.append(buf, size_t(n));
  std::string tag = "[", text;
  tag += std::to_string(r.index);
  tag += "] ";
  size_t start = 0;
  for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1)
    text += tag + pending.substr(start, nl + 1 - start);
  pending.erase(0, start);
  if (n <= 0) {  // EOF: flush a last unterminated line
    if (!pending.empty()) text += tag + pending + "\n";
    pending.clear();
    ::close(r.out[which]);
    r.out[which] = -1;
  }
  writeAll(which == 0 ? 1 : 2, text);
}

bool Launcher::anyOutputOpen() const {
  return std::any_of(ranks_.begin(), ranks_.end(),
                     [](auto& r) { return r.out[0] >= 0 || r.out[1] >= 0; });
}

int Launcher::run() {
  std::string program = resolve(o_.command[0]);
  if (program.empty()) {
    std::fprintf(stderr, "chorus-run: %s: command not found or not executable\n",
                 o_.command[0].c_str());
    return 127;
  }
  // Signals arrive through a signalfd; blocked before the store's thread starts, so that
  // only the main loop ever sees them.
  // A signal ignored when we start (nohup, a background job) stays ignored, for the ranks too.
  sigset_t mask, oldMask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(s, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) sigaddset(&mask, s);
  }
  ::sigprocmask(SIG_BLOCK, &mask, &oldMask);
  ::signal(SIGPIPE, SIG_IGN);
  int sigfd = ::signalfd(-1, &mask, SFD_CLOEXEC);
  if (sigfd < 0) {
    std::perror("chorus-run: signalfd");
    return 1;
  }
  start(program, oldMask);

  auto now = Clock::now();
  auto timeoutAt = o_.timeout > 0 ? now + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(o_.timeout))
                                  : Clock::time_point::max();
  auto drainUntil = Clock::time_point::max();
  int interrupts = 0;
  bool graceSpent = false;
  for (;;) {
    now = Clock::now();
    if (live_ == 0) {
      // Helpers a rank left behind may hold its output open: do not wait long for them.
      if (drainUntil == Clock::time_point::max()) drainUntil = now + std::chrono::seconds(1);
      if (!anyOutputOpen() || now >= drainUntil) break;
    }
    if (now >= timeoutAt && !timedOut_) {
      timedOut_ = true;
      char buf[128];
      std::snprintf(buf, sizeof(buf), "chorus-run: timeout of %gs expired; killing %d ranks\n",
                    o_.timeout, live_);
      writeAll(2, buf);
      killAll(SIGKILL);
    }
    if (now >= graceAt_ && !graceSpent && live_ > 0) {
      graceSpent = true;
      writeAll(2, "chorus-run: grace period over; killing the " + std::to_string(live_) +
                      " ranks still running\n");
      killAll(SIGKILL);
    }
    auto next = std::min({timeoutAt, graceSpent ? Clock::time_point::max() : graceAt_, drainUntil});
    int ms = 1000;
    if (next != Clock::time_point::max())
      ms = int(std::clamp<int64_t>(std::chrono::ceil<std::chrono::milliseconds>(next - now).count(),
                                   0, 1000));
    std::vector<pollfd> fds{{sigfd, POLLIN, 0}};
    std::vector<std::pair<Rank*, int>> owners;
    for (auto& r : ranks_)
      for (int k = 0; k < 2; ++k)
        if (r.out[k] >= 0) fds.push_back({r.out[k], POLLIN, 0}), owners.emplace_back(&r, k);
    if (::poll(fds.data(), fds.size(), ms) < 0 && errno != EINTR) {
      std::perror("chorus-run: poll");
      killAll(SIGKILL);
    }
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents) pumpOutput(*owners[i - 1].first, owners[i - 1].second);
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      while (::read(sigfd, &info, sizeof(info)) == sizeof(info)) {
        int sig = int(info.ssi_signo);
        if (sig == SIGCHLD) {
          reap();
        } else {
          interrupted_ = true;
          if (++interrupts == 1) {
            writeAll(2, "chorus-run: got " + signalName(sig) + "; passing it to the ranks\n");
            killAll(sig);
            auto giveUp = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(grace_));
            graceAt_ = std::min(graceAt_, giveUp);
          } else {
            writeAll(2, "chorus-run: got " + signalName(sig) + " again; killing the ranks\n");
            killAll(SIGKILL);
          }
        }
        pollfd again{sigfd, POLLIN, 0};
        if (::poll(&again, 1, 0) != 1) break;
      }
    }
  }
  // As we found it, for the next launch of a restart.
  ::close(sigfd);
  ::sigprocmask(SIG_SETMASK, &oldMask, nullptr);
  return finish();
}

// What the ranks reported when they failed (CHORUS_REPORT_DIR), one line each; removes
// the directory.
std::string Launcher::collectReports() {
  std::string text;
  if (reportDir_.empty()) return text;
  for (int i = 0; i < o_.n; ++i) {
    const std::string path = reportDir_ + "/rank-" + std::to_string(i) + ".txt";
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      char line[2048];
      if (std::fgets(line, sizeof line, f)) {
        std::string report = line;
        if (!report.empty() && report.back() == '\n') report.pop_back();
        text += "  " + report + "\n";
      }
      std::fclose(f);
      ::unlink(path.c_str());
    }
  }
  ::rmdir(reportDir_.c_str());
  return text;
}

int Launcher::finish() {
  for (auto& r : ranks_)  // leave no helper of a failed rank behind
    if (r.killed || !(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0)) ::kill(-r.pid, SIGKILL);
  const std::string reports = collectReports();
  if (failureOrder_.empty() && !timedOut_) return 0;
  std::string list;
  for (int i : failureOrder_) {
    int s = ranks_[size_t(i)].status;
    list += (list.empty() ? "" : ", ") + std::to_string(i) + " (" +
            (WIFEXITED(s) ? "status " + std::to_string(WEXITSTATUS(s)) : signalName(WTERMSIG(s))) +
            ")";
  }
  writeAll(2, "chorus-run: " + std::to_string(failureOrder_.size()) + " of " +
                  std::to_string(o_.n) + " ranks failed" + (timedOut_ ? " after the timeout" : "") +
                  ": " + list + "\n");
  if (!reports.empty()) writeAll(2, "chorus-run: what the ranks reported:\n" + reports);
  if (timedOut_) return 124;
  int first = ranks_[size_t(failureOrder_.front())].status;  // the first failure is the cause
  return WIFEXITED(first) ? WEXITSTATUS(first) : 128 + WTERMSIG(first);
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parseArgs(argc, argv);
  double grace = 15;
  try {
    chorus::settings::validateProcess();  // the ranks inherit this environment: check it once
    grace = chorus::settings::duration("CHORUS_RUN_GRACE").count() / 1000.0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chorus-run: %s\n", e.what());
    return 2;
  }
  try {
    for (int restart = 0;; ++restart) {
      Launcher launcher(options, grace, restart);
      const int status = launcher.run();
      if (status == 0 || launcher.stopped() || restart >= options.maxRestarts) return status;
      std::fprintf(stderr, "chorus-run: restarting the job (restart %d of %d)\n", restart + 1,
                   options.maxRestarts);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chorus-run: %s\n", e.what());
    return 1;
  }
}
