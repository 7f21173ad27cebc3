// How a rank finds the others: a unique id (address of the store + job secret) or the
// environment (chorus-run, torchrun, mpirun).
#pragma once

#include "net/socket.hpp"

#include <chorus/chorus.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace chorus {

class TcpStoreServer;

struct Rendezvous {
  net::SocketAddress store;  // where the TcpStoreServer listens
  uint64_t secret = 0;
};

UniqueId encodeUniqueId(const Rendezvous& rendezvous);
// Throws Error(InvalidArgument) if the bytes are not a Chorus unique id.
Rendezvous decodeUniqueId(const UniqueId& id);

// Starts a store server on the interface chosen by CHORUS_SOCKET_IFNAME (any free port)
// and keeps it alive until the process exits; returns its rendezvous.
Rendezvous startProcessStore(int hostRank);

struct EnvLaunch {
  int rank = 0;
  int nranks = 1;
  int localRank = 0;
  Rendezvous rendezvous;
  // True on the rank that must start the store server at rendezvous.store itself
  // (rank 0 under torchrun-style variables); the secret is then CHORUS_JOB_SECRET hashed,
  // or derived from the port and run id when none is given.
  bool hostsStore = false;
  std::string source;  // "chorus", "torchrun" or "mpirun", for messages
};

// Reads the environment. CHORUS_RANK, CHORUS_WORLD_SIZE, CHORUS_LOCAL_RANK, CHORUS_ADDR,
// CHORUS_PORT, CHORUS_SECRET (hex, set by chorus-run, whose store it is) and
// CHORUS_JOB_SECRET (any text; rank 0 hosts the store) take precedence over RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT; Open MPI's OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK} are used when
// neither gives a rank, with a file rendezvous in /tmp keyed by the MPI job id when no
// address is given. Throws Error(InvalidArgument) with a clear message when incomplete.
EnvLaunch readEnvironment(Deadline deadline);

// Identity of the host as seen for shared memory: boot id + hostname + network namespace.
std::string hostIdentity();

uint64_t randomSecret();

}  // namespace chorus
