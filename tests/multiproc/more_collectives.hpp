// chorus_collectives_test's cases for gather, scatter, all-gather-v and reduce-scatter-v
// (issue 13): the expected elements come from the test's own inputs and Reference, never
// from the library; guard zones around every buffer; buffers a rank must not write are
// checked unchanged.
#pragma once

#include "case_check.hpp"
#include "inputs.hpp"

#include <optional>

namespace chorus_test {

class MoreCollectives {
 public:
  MoreCollectives(chorus::Communicator& comm, const Case& c, CaseCheck& chk)
      : comm_(comm),
        c_(c),
        chk_(chk),
        rank_(comm.rank()),
        n_(comm.size()),
        s_(static_cast<size_t>(c.type->size)),
        mis_(static_cast<size_t>((c.index / 2) % 3) * s_),
        big_(c.count * static_cast<size_t>(n_) > kPeriod),
        in_(*c.type, valueKindFor(*c.type, isReduction(c.coll), c.op), c.seed, big_) {}

  void run() {
    switch (c_.coll) {
      case Coll::Gather:
        return gather();
      case Coll::Scatter:
        return scatter();
      case Coll::AllGatherV:
        return allGatherV();
      case Coll::ReduceScatterV:
        return reduceScatterV();
      default:
        chk_.fail("not a case of MoreCollectives");
    }
  }

 private:
  auto input(int r, size_t first) const {
    return [this, r, first](unsigned char* out, size_t n) { in_.fill(out, r, first, n); };
  }
  static auto initial(const GuardedBuffer& b) {
    return [&b, sz = b.bytes()](unsigned char* out, size_t) { b.initialData(out, 0, sz); };
  }

  // Root: block r of recv is rank r's input. Others: recv untouched.
  void gather() {
    const size_t cnt = c_.count, total = cnt * n_;
    const bool root = rank_ == c_.root;
    GuardedBuffer recv(total * s_, mis_, c_.seed + 2);
    std::optional<GuardedBuffer> send;
    unsigned char* sp = recv.data() + rank_ * cnt * s_;
    if (c_.inPlace && root) {
      in_.fill(sp, rank_, 0, cnt);
    } else {
      send.emplace(cnt * s_, mis_, c_.seed + 1);
      in_.fill(send->data(), rank_, 0, cnt);
      sp = send->data();
    }
    chorus::Work w = comm_.gather(sp, recv.data(), cnt, c_.type->type, c_.root);
    waitFor(w, "gather");
    if (root) {
      chk_.elements(
          "result", recv.data(), total,
          [&](unsigned char* out, size_t) {
            for (int r = 0; r < n_; ++r) in_.fill(out + r * cnt * s_, r, 0, cnt);
          },
          false);
    } else {
      chk_.elements("non-root recv buffer (must be untouched)", recv.data(), total, initial(recv),
                    false);
    }
    chk_.guards("recv buffer", recv);
    if (send) {
      chk_.elements("send buffer (must be unchanged)", send->data(), cnt, input(rank_, 0), false);
      chk_.guards("send buffer", *send);
    }
  }

  // Rank r's recv is block r of the root's input; the root's send stays unchanged.
  void scatter() {
    const size_t cnt = c_.count, total = cnt * n_;
    const bool root = rank_ == c_.root;
    GuardedBuffer send(total * s_, mis_, c_.seed + 1);
    in_.fill(send.data(), rank_, 0, total);  // non-roots: data that must not be used
    std::optional<GuardedBuffer> recv;
    unsigned char* rp = send.data() + rank_ * cnt * s_;
    if (!(c_.inPlace && root)) {
      recv.emplace(cnt * s_, mis_, c_.seed + 2);
      rp = recv->data();
    }
    chorus::Work w = comm_.scatter(send.data(), rp, cnt, c_.type->type, c_.root);
    waitFor(w, "scatter");
    chk_.elements("result", rp, cnt, input(c_.root, rank_ * cnt), false);
    chk_.elements("send buffer (must be unchanged)", send.data(), total, input(rank_, 0), false);
    chk_.guards("send buffer", send);
    if (recv) chk_.guards("recv buffer", *recv);
  }

  // Block r (counts[r] elements, packed) of every rank's recv is rank r's input.
  void allGatherV() {
    const std::vector<size_t> counts = unevenCounts(n_, c_.count);
    std::vector<size_t> offset(n_ + 1, 0);
    for (int r = 0; r < n_; ++r) offset[r + 1] = offset[r] + counts[r];
    const size_t total = offset[n_], mine = counts[rank_];
    GuardedBuffer recv(total * s_, mis_, c_.seed + 2);
    std::optional<GuardedBuffer> send;
    unsigned char* sp = recv.data() + offset[rank_] * s_;
    if (c_.inPlace) {
      in_.fill(sp, rank_, 0, mine);
    } else {
      send.emplace(mine * s_, mis_, c_.seed + 1);
      in_.fill(send->data(), rank_, 0, mine);
      sp = send->data();
    }
    chorus::Work w = comm_.allGatherV(sp, recv.data(), counts, c_.type->type);
    waitFor(w, "allGatherV");
    chk_.elements(
        "result", recv.data(), total,
        [&](unsigned char* out, size_t) {
          for (int r = 0; r < n_; ++r) in_.fill(out + offset[r] * s_, r, 0, counts[r]);
        },
        false);
    chk_.guards("recv buffer", recv);
    if (send) {
      chk_.elements("send buffer (must be unchanged)", send->data(), mine, input(rank_, 0), false);
      chk_.guards("send buffer", *send);
    }
  }

  // This rank's recv is the reduction of block `rank` of every rank's input (packed).
  void reduceScatterV() {
    const std::vector<size_t> counts = unevenCounts(n_, c_.count);
    std::vector<size_t> offset(n_ + 1, 0);
    for (int r = 0; r < n_; ++r) offset[r + 1] = offset[r] + counts[r];
    const size_t total = offset[n_], mine = counts[rank_], at = offset[rank_];
    const bool avgUlp = c_.op == chorus::RedOp::Avg && c_.type->kind == Kind::Float;
    Reference ref(in_, c_.op, n_, total);
    GuardedBuffer send(total * s_, mis_, c_.seed + 1);
    in_.fill(send.data(), rank_, 0, total);
    std::optional<GuardedBuffer> recv;
    unsigned char* rp = send.data() + at * s_;
    if (!c_.inPlace) {
      recv.emplace(mine * s_, mis_, c_.seed + 2);
      rp = recv->data();
    }
    chorus::Work w = comm_.reduceScatterV(send.data(), rp, counts, c_.type->type, c_.op);
    waitFor(w, "reduceScatterV");
    chk_.elements(
        "result", rp, mine, [&](unsigned char* out, size_t n) { ref.fill(out, at, n); }, avgUlp);
    if (c_.inPlace) {  // the other ranks' blocks are input: unchanged
      chk_.elements("send buffer before own block (must be unchanged)", send.data(), at,
                    input(rank_, 0), false);
      chk_.elements("send buffer after own block (must be unchanged)", rp + mine * s_,
                    total - at - mine, input(rank_, at + mine), false);
    } else {
      chk_.elements("send buffer (must be unchanged)", send.data(), total, input(rank_, 0), false);
      chk_.guards("recv buffer", *recv);
    }
    chk_.guards("send buffer", send);
  }

  chorus::Communicator& comm_;
  const Case& c_;
  CaseCheck& chk_;
  const int rank_, n_;
  const size_t s_, mis_;
  const bool big_;
  const Inputs in_;
};

}  // namespace chorus_test
