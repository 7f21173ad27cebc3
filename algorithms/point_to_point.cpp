// Send and receive: one step each; `root` carries the peer.
#include "algorithms/algorithms.hpp"
#include "algorithms/steps.hpp"

namespace chorus {

Schedule directSend(const CollectiveArgs& args) {
  Schedule s;
  if (args.count > 0) steps::send(s, args.root, steps::in(0, args.count));
  return s;
}

Schedule directRecv(const CollectiveArgs& args) {
  Schedule s;
  if (args.count > 0) steps::recv(s, args.root, steps::out(0, args.count));
  return s;
}

}  // namespace chorus
