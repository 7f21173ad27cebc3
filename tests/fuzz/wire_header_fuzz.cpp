// The call fingerprint check: a peer's 32-byte header (any bytes) against this rank's op.
#include "engine/wire_header.hpp"
#include "fuzz_input.hpp"

#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  if (size < sizeof(detail::WireHeader) + 8) return 0;
  detail::WireHeader theirs;
  std::memcpy(&theirs, data, sizeof(theirs));
  const uint8_t* mine = data + sizeof(theirs);  // this rank's op, also from the input
  detail::OpState op;
  op.collective = static_cast<Collective>(mine[0] % 8);
  op.type = static_cast<DataType>(mine[1] % chorusNumTypes);
  op.op = static_cast<RedOp>(mine[2] % 5);
  op.algorithmIndex = int(int8_t(mine[3]));
  op.root = int(int8_t(mine[4]));
  op.count = size_t(mine[5]) << (mine[6] % 48);
  op.sequence = mine[7];
  chorus::fuzz::expectOnlyChorusErrors([&] {
    (void)detail::describeHeader(theirs);
    (void)detail::mismatch(op, theirs, int(mine[4]));
    // A peer making the same call always matches; for send/recv the peer makes the
    // partner call (a send matches a receive of the same count and type).
    detail::WireHeader same = detail::headerOf(op);
    if (op.collective == Collective::Send) same.collective = uint8_t(Collective::Recv);
    if (op.collective == Collective::Recv) same.collective = uint8_t(Collective::Send);
    if (detail::mismatch(op, same, 1)) __builtin_trap();
  });
  return 0;
}
