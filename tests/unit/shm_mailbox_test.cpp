// The shm transport's small-message mailbox and its set-up: ranks are threads sharing a
// HashStore (each maps the segments as a separate process would).
#include "errors.hpp"
#include "store/hash_store.hpp"
#include "transports/transport.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace chorus {
namespace {

using namespace std::chrono_literals;

// Creates one shm transport per rank concurrently; hosts[r] is rank r's host identity.
// Returns the transports, or the error each rank's creation threw.
struct Created {
  std::vector<std::unique_ptr<Transport>> transports;
  std::vector<std::string> errors;
};
Created createAll(const std::vector<std::string>& hosts) {
  const int n = static_cast<int>(hosts.size());
  HashStore store;
  for (int r = 0; r < n; ++r)
    store.set("host/" + std::to_string(r), std::as_bytes(std::span(hosts[r])));
  Created c;
  c.transports.resize(n);
  c.errors.resize(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        c.transports[r] = makeShmTransport({r, n, &store, hosts[r], Clock::now() + 20s});
      } catch (const std::exception& e) {
        c.errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return c;
}

std::vector<std::byte> message(int rank, uint32_t seq, size_t bytes) {
  std::vector<std::byte> m(bytes);
  for (size_t i = 0; i < bytes; ++i) m[i] = std::byte((rank * 131 + seq * 17 + i * 7) & 0xff);
  return m;
}

TEST(ShmMailbox, TakesWholeMessagesOfTheAskedSequenceOnly) {
  Created c = createAll({"h", "h", "h"});
  for (const auto& e : c.errors) ASSERT_EQ(e, "");
  Mailbox* box0 = c.transports[0]->mailbox();
  Mailbox* box1 = c.transports[1]->mailbox();
  ASSERT_NE(box0, nullptr);
  ASSERT_GE(box0->capacity(), 288u);
  std::vector<std::byte> got(box0->capacity());
  EXPECT_FALSE(box0->tryTake(1, 1, got.data(), 8));  // nothing posted yet
  for (uint32_t seq = 1; seq <= 6; ++seq) {
    const size_t bytes = seq % 2 ? box1->capacity() : 5 + seq;  // odd lengths too
    const auto sent = message(1, seq, bytes);
    box1->post(seq, sent.data(), bytes);
    EXPECT_TRUE(box0->tryTake(1, seq, got.data(), bytes)) << seq;
    EXPECT_EQ(std::memcmp(got.data(), sent.data(), bytes), 0) << seq;
    EXPECT_FALSE(box0->tryTake(1, seq + 1, got.data(), bytes)) << seq;  // not yet posted
    if (seq > 1)  // seq - 1 lives in the other slot: still there until seq + 1 replaces it
      EXPECT_TRUE(box0->tryTake(1, seq - 1, got.data(), 4)) << seq;
    if (seq > 2)  // seq replaced seq - 2
      EXPECT_FALSE(box0->tryTake(1, seq - 2, got.data(), 4)) << seq;
    EXPECT_FALSE(box0->tryTake(2, seq, got.data(), 4));  // rank 2 never posted
  }
  EXPECT_THROW(box1->post(7, got.data(), box1->capacity() + 1), Error);
}

// Messages longer than ShmMailbox::kLineBytes (96) go plainly into the slot's data area
// under a flag with their length; shorter ones as LL words. A take that finds a plain
// message gets it as posted (cut, or followed by zeros), so that a call of another size
// shows in the fingerprint instead of a wait for bytes never sent; one that expects more
// LL words than were posted, or a plain message where LL words were posted, waits (the
// peer finds the difference in ours). A plain message's bytes never pass for LL words of
// a later sequence.
TEST(ShmMailbox, AMessageOfAnotherLengthOrKindIsTakenAsPostedOrLeft) {
  Created c = createAll({"h", "h"});
  for (const auto& e : c.errors) ASSERT_EQ(e, "");
  Mailbox& box0 = *c.transports[0]->mailbox();
  Mailbox& box1 = *c.transports[1]->mailbox();
  const size_t capacity = box0.capacity();
  std::vector<std::byte> got(capacity);
  auto takes = [&](uint32_t seq, size_t posted, size_t asked) {
    const auto sent = message(1, seq, posted);
    std::fill(got.begin(), got.end(), std::byte{0xee});
    if (!box0.tryTake(1, seq, got.data(), asked)) return false;
    const size_t same = std::min(posted, asked);
    EXPECT_EQ(std::memcmp(got.data(), sent.data(), same), 0) << seq;
    for (size_t i = same; i < asked; ++i) EXPECT_EQ(got[i], std::byte{0}) << seq << " " << i;
    for (size_t i = asked; i < capacity; ++i) EXPECT_EQ(got[i], std::byte{0xee}) << seq << " " << i;
    return true;
  };
  auto post = [&](uint32_t seq, size_t bytes) {
    box1.post(seq, message(1, seq, bytes).data(), bytes);
  };
  post(1, capacity);                    // plain
  EXPECT_TRUE(takes(1, capacity, 40));  // LL expected
  EXPECT_TRUE(takes(1, capacity, 200));
  EXPECT_TRUE(takes(1, capacity, capacity));
  post(2, 40);                                       // LL
  EXPECT_TRUE(takes(2, 40, 12));                     // fewer words
  EXPECT_FALSE(takes(2, 40, 60));                    // more words: left to the peer
  EXPECT_FALSE(takes(2, 40, capacity));              // plain expected: left to the peer
  EXPECT_FALSE(box0.tryTake(1, 3, got.data(), 40));  // slot of 1: plain, older
  EXPECT_FALSE(box0.tryTake(1, 3, got.data(), capacity));
  post(3, 120);  // plain, over the older plain message
  EXPECT_TRUE(takes(3, 120, 60));
  EXPECT_TRUE(takes(3, 120, 200));
  EXPECT_TRUE(takes(3, 120, capacity));
  // Plain bytes that look like LL words of sequence 6 (every 8-byte word's upper half is
  // 6), posted as message 4: no message 6 is there for any length.
  std::vector<uint32_t> lookalike(capacity / 4);
  for (size_t i = 0; i < lookalike.size(); ++i) lookalike[i] = i % 2 ? 6 : 0xabcd0000u + i;
  box1.post(4, lookalike.data(), capacity);
  for (size_t asked : {size_t{8}, size_t{40}, size_t{96}, size_t{200}, capacity})
    EXPECT_FALSE(box0.tryTake(1, 6, got.data(), asked)) << asked;
  EXPECT_TRUE(box0.tryTake(1, 4, got.data(), capacity));
  EXPECT_EQ(std::memcmp(got.data(), lookalike.data(), capacity), 0);
}

// A rank asleep in Transport::wait (after prepareWait and one more look at the slot) is
// woken by the peer's post, whether the post came before it fell asleep or after. The
// deadline's limit shows that the rank really sleeps until it is woken.
TEST(ShmMailbox, PostWakesARankAsleepAfterLooking) {
  Created c = createAll({"h", "h"});
  for (const auto& e : c.errors) ASSERT_EQ(e, "");
  Transport& sleeper = *c.transports[0];
  Mailbox& poster = *c.transports[1]->mailbox();
  // How long rank 0 slept (until `limit` at most) when rank 1 posted message `seq` (or
  // did not: seq 0) `after` it looked at the slot.
  auto sleptFor = [&](uint32_t seq, std::chrono::milliseconds after,
                      std::chrono::milliseconds limit) {
    std::atomic<bool> looked{false}, sawIt{false};
    Clock::duration slept{};
    std::thread t([&] {
      std::byte got[8];
      const uint64_t token = sleeper.prepareWait();
      sawIt = seq != 0 && sleeper.mailbox()->tryTake(1, seq, got, sizeof got);
      looked = true;
      if (sawIt) return;
      const auto start = Clock::now();
      sleeper.wait(token, start + limit);
      slept = Clock::now() - start;
    });
    while (!looked) std::this_thread::yield();
    std::this_thread::sleep_for(after);
    const auto sent = message(1, seq, 8);
    if (seq != 0) poster.post(seq, sent.data(), sent.size());
    t.join();
    EXPECT_FALSE(sawIt) << seq;
    return slept;
  };
  EXPECT_GE(sleptFor(0, 0ms, 400ms), 350ms);  // nothing posted: asleep until the limit
  EXPECT_LT(sleptFor(1, 0ms, 20s), 10s);      // posted while it fell asleep
  EXPECT_LT(sleptFor(2, 50ms, 20s), 10s);     // posted once it was in the futex
}

TEST(ShmMailbox, ThreeRanksExchangeManyMessagesInStep) {
  Created c = createAll({"h", "h", "h"});
  for (const auto& e : c.errors) ASSERT_EQ(e, "");
  std::vector<std::thread> threads;
  std::vector<int> wrong(3, 0);
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      Mailbox& box = *c.transports[r]->mailbox();
      std::vector<std::byte> got(box.capacity());
      const auto giveUp = Clock::now() + 60s;
      for (uint32_t seq = 1; seq <= 300; ++seq) {
        const size_t bytes = 4 + (seq * 13) % (box.capacity() - 4);
        const auto mine = message(r, seq, bytes);
        box.post(seq, mine.data(), bytes);
        for (int p = 0; p < 3; ++p) {
          if (p == r) continue;
          while (!box.tryTake(p, seq, got.data(), bytes))
            if (Clock::now() > giveUp)
              return void(++wrong[r]);
            else
              std::this_thread::yield();  // three threads, maybe fewer cores
          wrong[r] += std::memcmp(got.data(), message(p, seq, bytes).data(), bytes) != 0;
        }
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, std::vector<int>(3, 0));
}

TEST(ShmTransport, EveryRankRefusesWhenOneIsOnAnotherHost) {
  Created c = createAll({"h", "h", "elsewhere"});
  EXPECT_NE(c.errors[2].find("rank 2 is on another host than rank 0"), std::string::npos)
      << c.errors[2];
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(c.errors[r].find("1 rank(s) are on another host than rank 0"), std::string::npos)
        << c.errors[r];
}

}  // namespace
}  // namespace chorus
