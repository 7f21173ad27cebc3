// LocalPeerWatch and the process identities it is built from: a peer's death is named
// only once its process is gone for the grace, never for a live one or for ourselves.
#include "bootstrap/process_watch.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "errors.hpp"

namespace chorus {
namespace {

using namespace std::chrono_literals;

// A child that sleeps until killed; reaped (so its pid is free, not a zombie) on kill().
class Child {
 public:
  Child() : pid_(::fork()) {
    if (pid_ == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  ~Child() { kill(); }
  pid_t pid() const { return pid_; }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // Dead but not reaped: a zombie, which counts as gone.
  void killWithoutReaping() {
    ::kill(pid_, SIGKILL);
    siginfo_t info{};
    ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT);
  }

 private:
  pid_t pid_;
};

TEST(ProcessWatch, ProcessGoneOnlyForAnExitedProcess) {
  Child child;
  ASSERT_GT(child.pid(), 0);
  EXPECT_FALSE(processGone(child.pid()));
  EXPECT_FALSE(processGone(::getpid()));
  const pid_t pid = child.pid();
  child.killWithoutReaping();
  EXPECT_TRUE(processGone(pid));  // a zombie
  child.kill();
  EXPECT_TRUE(processGone(pid));
}

TEST(ProcessWatch, IdentityNamesThisProcessInThisNamespace) {
  const std::string mine = processIdentity();
  ASSERT_FALSE(mine.empty()) << "this test's /proc belongs to its pid namespace";
  EXPECT_EQ(mine.substr(mine.find("/pid:")), "/pid:" + std::to_string(::getpid()));
  EXPECT_EQ(pidInOurNamespace(mine), ::getpid());
  const std::string ns = mine.substr(0, mine.find("/pid:"));
  EXPECT_EQ(pidInOurNamespace(ns + "/pid:4242"), 4242);
  // Another pid namespace, or anything malformed: no pid to watch.
  EXPECT_EQ(pidInOurNamespace("pidns:1/pid:4242"), 0);
  EXPECT_EQ(pidInOurNamespace(""), 0);
  EXPECT_EQ(pidInOurNamespace(ns), 0);
  EXPECT_EQ(pidInOurNamespace(ns + "/pid:"), 0);
  EXPECT_EQ(pidInOurNamespace(ns + "/pid:12x"), 0);
  EXPECT_EQ(pidInOurNamespace(ns + "/pid:0"), 0);
  EXPECT_EQ(pidInOurNamespace(ns + "/pid:-5"), 0);
  EXPECT_EQ(pidInOurNamespace(ns + "/pid:99999999999"), 0);
}

TEST(ProcessWatch, NamesAGonePeerOnlyAfterTheGrace) {
  Child alive, victim;
  LocalPeerWatch watch(1000ms);  // long enough that the check right after the kill is inside
  watch.add(1, alive.pid());
  watch.add(2, ::getpid());  // a rank of this process: never watched
  watch.add(3, victim.pid());
  watch.check();  // everyone there
  const pid_t victimPid = victim.pid();
  victim.kill();
  watch.check();  // gone, but within the grace: the store's word may still come
  std::this_thread::sleep_for(1100ms);
  try {
    watch.check();
    FAIL() << "rank 3 died and the watch said nothing";
  } catch (const PeerError& e) {
    EXPECT_EQ(e.peer(), 3);
    EXPECT_EQ(e.failedRanks(), std::vector<int>{3});
    EXPECT_EQ(std::string(e.what()), "rank 3 (pid " + std::to_string(victimPid) +
                                         ", on this host) is gone (it exited or was killed)");
  }
}

TEST(ProcessWatch, NamesEveryGonePeerLowestFirst) {
  Child a, b, c;
  LocalPeerWatch watch(0ms);
  watch.add(4, a.pid());
  watch.add(5, b.pid());
  watch.add(7, c.pid());
  c.kill();
  a.kill();
  try {
    watch.check();
    FAIL() << "two peers died and the watch said nothing";
  } catch (const PeerError& e) {
    EXPECT_EQ(e.peer(), 4);
    EXPECT_EQ(e.failedRanks(), (std::vector<int>{4, 7}));
  }
}

}  // namespace
}  // namespace chorus
