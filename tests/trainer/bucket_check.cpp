// trainer_bucket_check: the trainer's gradient buckets (makeBuckets) on hand-made parameter
// groups, against partitions worked out by hand. Buckets fill from the last group back (the
// order backward produces gradients); a bucket closes on the group that brings it to the
// cap or past it (as PyTorch DDP's bucket_cap_mb), the first group ends the last bucket,
// and the first bucket carries `tail` extra floats (the loss). Exit 0 only if all match.
#include "examples/dp_trainer/grad_sync.hpp"

#include <cstdio>
#include <vector>

namespace {

using trainer::Bucket;
using trainer::ParamGroup;

// Groups of the given sizes (floats), laid out back to back from 0.
std::vector<ParamGroup> groups(std::initializer_list<size_t> sizes) {
  std::vector<ParamGroup> g;
  size_t at = 0;
  for (size_t s : sizes) g.push_back({at, at + s}), at += s;
  return g;
}

int failures = 0;

void expect(const char* what, const std::vector<Bucket>& got, const std::vector<Bucket>& want) {
  bool same = got.size() == want.size();
  for (size_t i = 0; same && i < got.size(); ++i)
    same = got[i].begin == want[i].begin && got[i].end == want[i].end &&
           got[i].lowLayer == want[i].lowLayer && got[i].highLayer == want[i].highLayer;
  if (same) return;
  ++failures;
  std::printf("FAIL %s: got", what);
  for (const Bucket& b : got)
    std::printf(" [%zu,%zu) layers %d-%d", b.begin, b.end, b.lowLayer, b.highLayer);
  std::printf("\n");
}

}  // namespace

int main() {
  using trainer::makeBuckets;
  // Four groups of 10 floats, cap 80 bytes (20 floats): the last two reach it exactly and
  // close a bucket; the first two make the second.
  expect("exactly the cap", makeBuckets(groups({10, 10, 10, 10}), 80, 0),
         {{20, 40, 2, 3}, {0, 20, 0, 1}});
  // One float under the cap per pair: three groups go into each bucket instead.
  expect("just under the cap", makeBuckets(groups({10, 10, 10, 10, 10, 10}), 84, 0),
         {{30, 60, 3, 5}, {0, 30, 0, 2}});
  // Caps are in bytes (4 per float). A group bigger than the cap closes the bucket it
  // joins (the bucket then exceeds the cap); the tail (the loss) rides in the first bucket,
  // after the last group: 9 + 1 floats stay under 30, the 50-float group closes it.
  expect("a big group and a tail", makeBuckets(groups({5, 50, 9}), 120, 1),
         {{5, 65, 1, 2}, {0, 5, 0, 0}});
  // The tail counts toward the first bucket's cap: 9 + 1 floats reach 10 exactly.
  expect("the tail closes the first bucket", makeBuckets(groups({5, 50, 9}), 40, 1),
         {{55, 65, 2, 2}, {5, 55, 1, 1}, {0, 5, 0, 0}});
  // A cap no group reaches: one bucket of everything; one group: one bucket.
  expect("one bucket", makeBuckets(groups({3, 4, 5}), 1 << 20, 2), {{0, 14, 0, 2}});
  expect("one group", makeBuckets(groups({7}), 4, 0), {{0, 7, 0, 0}});
  if (failures == 0) std::printf("bucket check: 6 partitions as worked out by hand\n");
  return failures ? 1 : 0;
}
