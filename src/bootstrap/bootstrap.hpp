// How a rank finds the others: a unique id (address of the store + job secret) or the
// environment (chorus-run, torchrun, mpirun).
#pragma once

#include "net/socket.hpp"
#include "security/job_secret.hpp"

#include <chorus/chorus.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace chorus {

class TcpStoreServer;

struct Rendezvous {
  net::SocketAddress store;  // where the TcpStoreServer listens
  security::JobSecret secret;
  // The store is not running yet: rank 0 of the communicator hosts it (CHORUS_COMM_ID).
  bool rankZeroHosts = false;
};

UniqueId encodeUniqueId(const Rendezvous& rendezvous);
// Throws Error(InvalidArgument) if the bytes are not a Chorus unique id, or if its store
// listens on loopback of another host (or network namespace) than this process's.
Rendezvous decodeUniqueId(const UniqueId& id);

// Starts a store server (any free port) and keeps it alive until the process exits;
// returns its rendezvous. It listens on the interface CHORUS_SOCKET_IFNAME selects, or
// on loopback when that is not set or `singleHost` says every rank is on this host.
Rendezvous startProcessStore(int hostRank, bool singleHost);

// A unique id with a fresh store in this process, whatever CHORUS_COMM_ID says (for ids a
// library makes for its own communicators: split, a clique in one process).
UniqueId freshUniqueId();
// The id of a store at `hostPort` ("host:port", "[v6]:port") that rank 0 of the
// communicator hosts when it is created: every process computes the same id. The secret is
// CHORUS_JOB_SECRET's, else derived from the address (then only this uid's local processes
// are admitted). Throws Error(InvalidArgument) for a malformed address.
UniqueId uniqueIdAt(const std::string& hostPort);

struct EnvLaunch {
  int rank = 0;
  int nranks = 1;
  int localRank = 0;
  Rendezvous rendezvous;
  // True on the rank that must start the store server at rendezvous.store itself
  // (rank 0 under torchrun-style variables); the secret is then CHORUS_JOB_SECRET hashed,
  // or derived from the port and run id when none is given (secret.derived).
  bool hostsStore = false;
  std::string source;  // "chorus", "torchrun" or "mpirun", for messages
};

// Reads the environment. CHORUS_RANK, CHORUS_WORLD_SIZE, CHORUS_LOCAL_RANK, CHORUS_ADDR,
// CHORUS_PORT, CHORUS_SECRET (hex, set by chorus-run, whose store it is) and
// CHORUS_JOB_SECRET (any text; rank 0 hosts the store) take precedence over RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT; Open MPI's OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK} are used when
// neither gives a rank, with a file rendezvous keyed by the MPI job id in a private
// directory (rendezvousDirectory) when no address is given. Throws Error(InvalidArgument) with a clear message when incomplete.
EnvLaunch readEnvironment(Deadline deadline);

// Identity of the host as seen for shared memory: boot id + hostname + network namespace.
std::string hostIdentity();

// The private directory for the mpirun file rendezvous: the first of
// $XDG_RUNTIME_DIR/chorus, ${TMPDIR:-/tmp}/chorus-<uid>, ${XDG_CACHE_HOME:-$HOME/.cache}/chorus
// that is (or can be made) a real directory owned by this uid with mode 0700; one that
// another user made first is skipped. Throws Error(SystemError) when none is.
std::string rendezvousDirectory();

}  // namespace chorus
