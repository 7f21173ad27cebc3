// Picks a transport by name. Optional transports (ib, ucx) register here when built.
#include "errors.hpp"
#include "transports/transport.hpp"

#include <string>

namespace chorus {

#if CHORUS_HAVE_VERBS
std::unique_ptr<Transport> makeIbTransport(const TransportContext& ctx);
bool ibDeviceAvailable();
#endif
#if CHORUS_HAVE_UCX
std::unique_ptr<Transport> makeUcxTransport(const TransportContext& ctx);
#endif

std::string defaultNetTransport() {
#if CHORUS_HAVE_VERBS
  if (ibDeviceAvailable()) return "ib";
#endif
  return "tcp";
}

std::unique_ptr<Transport> makeTransport(std::string_view kind, const TransportContext& ctx) {
  if (kind == "shm") return makeShmTransport(ctx);
  if (kind == "tcp") return makeTcpTransport(ctx);
#if CHORUS_HAVE_VERBS
  if (kind == "ib") return makeIbTransport(ctx);
#endif
#if CHORUS_HAVE_UCX
  if (kind == "ucx") return makeUcxTransport(ctx);
#endif
  std::string known = "shm, tcp";
#if CHORUS_HAVE_VERBS
  known += ", ib";
#endif
#if CHORUS_HAVE_UCX
  known += ", ucx";
#endif
  throw Error(Result::InvalidArgument,
              "unknown or not built transport '" + std::string(kind) + "' (built: " + known + ")");
}

}  // namespace chorus
