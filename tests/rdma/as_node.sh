#!/bin/sh
# as_node.sh RANKS_PER_NODE COMMAND...: runs COMMAND (a rank started by chorus-run, which
# sets CHORUS_RANK) on its own "node": a UTS namespace with the hostname
# chorus-node<CHORUS_RANK / RANKS_PER_NODE>, so Chorus's hostIdentity() (boot id,
# hostname, network namespace) tells the nodes apart and the ranks talk over CHORUS_NET.
# It launches the node as a launcher would, so CHORUS_LOCAL_RANK / CHORUS_LOCAL_SIZE become
# the node's (chorus-run's count every rank as local; the collectives suite checks them
# against the communicator's localRank/localSize).
# Root only (the Soft-RoCE guest). unshare execs in place: the pid chorus-run watches stays.
per=$1; shift
node=$((CHORUS_RANK / per))
export CHORUS_LOCAL_RANK=$((CHORUS_RANK % per)) CHORUS_LOCAL_SIZE=$per
exec unshare --uts sh -c 'hostname "chorus-node$0" && exec "$@"' "$node" "$@"
