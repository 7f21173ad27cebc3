// The declaration of every setting. The README's environment table is generated from this
// list (chorus-info --markdown); tests/settings_readme_test.sh fails when they differ.
#include "settings/settings.hpp"

// Specs leave the fields they do not need to their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace chorus::settings {
namespace {

constexpr int64_t K = 1 << 10, M = 1 << 20, G = int64_t{1} << 30;
constexpr int64_t kSecond = 1000;  // durations are kept in milliseconds

using enum Type;

const std::vector<Spec> kSpecs = {
    // --- the library -----------------------------------------------------------------
    {"CHORUS_TIMEOUT", Duration, "300s",
     "longest any wait may go without progress before it fails (a bare number is seconds)", 1,
     30 * 24 * 3600 * kSecond},
    {"CHORUS_KEEPALIVE", Duration, "30s",
     "a TCP connection (the rendezvous store's, the tcp transport's) whose other host stops "
     "answering this long (crashed or cut off; a stopped process still answers) ends, and its "
     "rank is reported as not reachable (TCP keepalive; `0`: the kernel's, hours); over ucx, "
     "the same keepalive for UCX's tcp connections (UCX_TCP_KEEPIDLE, KEEPINTVL and KEEPCNT, "
     "each unless set; `0`: UCX's own), at the connecting end through UCX and at the "
     "accepting end (which UCX 1.13 leaves without) by Chorus; it ends idle connections only",
     0, 3600 * kSecond},
    {"CHORUS_TRANSPORT", Enum, "auto",
     "`auto`: shm when all ranks share the host, else `CHORUS_NET`; or force one for every peer", 0,
     0, "auto|shm|tcp|ib|ucx"},
    {"CHORUS_NET", Enum, "", "transport between nodes (`socket` is `tcp`)", 0, 0,
     "ib|ucx|tcp|socket=tcp", "NCCL_NET", Scope::Library, false,
     "`ib` when an active RDMA device exists, else `tcp`"},
    {"CHORUS_TUNER", Enum, "model",
     "`model`: a cost model picks each call's algorithm; `static`: fixed thresholds", 0, 0,
     "model|static"},
    {"CHORUS_DETERMINISTIC", Boolean, "0",
     "`1`: a given shape always runs the same algorithm and reduction order, on every run and "
     "after a restart (no probe, tune file or cost model; `Options::deterministic` too)"},
    {"CHORUS_TUNE_FILE", Path, "",
     "figures for the cost model, written by `chorus-perf --calibrate FILE`"},
    {"CHORUS_TUNE_PROBE", Boolean, "1",
     "measure the links and kernels for a few ms at creation (`0`: use the defaults)"},
    {"CHORUS_TOPO_FILE", Path, "",
     "topology file: which ranks form a node, NICs, GPU links (format in "
     "`src/topology/topo_file.cpp`)"},
    {"CHORUS_ALGO", List, "", "force or exclude algorithms: `ring`, `allreduce:ring`, `^ring`", 0,
     0, "", "NCCL_ALGO"},
    {"CHORUS_SOCKET_IFNAME", List, "",
     "interfaces for TCP and the store (`getUniqueId` stores listen on loopback when unset): "
     "`eth`, `^docker`, `=eth0`",
     0, 0, "", "NCCL_SOCKET_IFNAME", Scope::Library, false, "the first interface that is up"},
    {"CHORUS_TCP_STREAMS", Integer, "2", "TCP connections per peer and NIC (striped in blocks)", 1,
     16},
    {"CHORUS_TCP_BLOCK", Size, "128K", "bytes of each striping block across the TCP streams", 8, G},
    {"CHORUS_TCP_BUFFER", Size, "", "bytes of each peer's TCP receive ring", 8, 4 * G, "", "",
     Scope::Library, false, "1M, or more to hold 2 blocks per stream"},
    {"CHORUS_TCP_SOCKBUF", Size, "0", "socket send and receive buffer bytes (`0`: the kernel's)", 0,
     G},
    {"CHORUS_SHM_FIFO_BYTES", Size, "1M",
     "bytes of each shared-memory FIFO (rounded up to a power of 2); unset: a FIFO is carved "
     "out when its sender first sends, 1M (32M / ranks beyond 32 ranks) while a rank's 8M "
     "budget lasts, then at most half of what is left, never less than 64K",
     4 * K, G},
    {"CHORUS_SPIN_US", Integer, "", "microseconds of polling before sleeping on a futex or poll", 0,
     10'000'000, "", "", Scope::Library, false,
     "50, or 200 when the machine's ranks outnumber its cores"},
    {"CHORUS_PAUSE_SPIN_US", Integer, "",
     "most microseconds of CHORUS_SPIN_US that poll without a "
     "system call (learnt from the waits before; the rest polls with sched_yield)",
     0, 10'000'000, "", "", Scope::Library, false,
     "20 (0 when the machine's ranks outnumber its cores)"},
    {"CHORUS_YIELD_ADAPT", Boolean, "1",
     "`1`: a wait whose sched_yield took a millisecond or more (the core went to a thread "
     "that computes, for a scheduler tick) stops yielding and sleeps, and the next waits "
     "sleep at once for a while (8 waits, doubling while it recurs); `0`: always poll "
     "with sched_yield for CHORUS_SPIN_US"},
    {"CHORUS_BIND_CORE", Boolean, "1",
     "`1`: where the machine's ranks outnumber its cores (every rank on the same kernel, "
     "whatever its network namespace or container), bind the thread that creates the "
     "communicator (and so every thread it starts later) to one core, its rank among the "
     "machine's ranks modulo the cores, unless its affinity was narrowed already; a "
     "program that computes on threads of its own gives them their affinity back "
     "(chorus-train does)"},
    {"CHORUS_NIC_BURST", Size, "0",
     "between nodes over tcp: the token bucket of a rate-limited NIC (tc's tbf, a cloud "
     "instance's bandwidth shaping), the bytes that pass at the interface's own speed after an "
     "idle spell; the tuner's model of the NIC takes it (0: none, the NIC runs at its rate)",
     0, G},
    {"CHORUS_SLICE_BYTES", Size, "256K", "most bytes one step moves per engine pass", 4 * K, G},
    {"CHORUS_STREAM_FROM_BYTES", Size, "64M",
     "one-sided copies into the output use streaming stores from this op size x ranks", 0,
     1024 * G},
    {"CHORUS_KERNEL_ISA", Enum, "", "cap the reduction kernels' instruction set", 0, 0,
     "avx512|avx2|generic", "", Scope::Library, false, "the best the CPU has"},
    {"CHORUS_DEBUG", Enum, "WARN",
     "log level on stderr: `INFO` adds set-up and each new shape's algorithm", 0, 0,
     "NONE|VERSION|WARN|INFO|TRACE", "NCCL_DEBUG"},
    {"CHORUS_DEBUG_SUBSYS", List, "",
     "accepted for NCCL compatibility; Chorus does not filter its log by subsystem yet", 0, 0, "",
     "NCCL_DEBUG_SUBSYS"},
    {"CHORUS_TRACE_STEPS", Path, "",
     "path prefix: each rank writes every call's steps (kind, peer, bytes, start, end) as "
     "Chrome-trace JSON to `PREFIX.rankR.json` (a split, shrink or grow: "
     "`PREFIX.<its key prefix>.rankR.json`; opens in Perfetto; `src/engine/step_trace.hpp`)"},
    {"CHORUS_COMM_ID", String, "",
     "`host:port`: `getUniqueId` (and `ncclGetUniqueId`) return the same id in every process, "
     "and rank 0 hosts the rendezvous there",
     0, 0, "", "NCCL_COMM_ID"},
    // --- verbs, as NCCL's NCCL_IB_* -------------------------------------------------------
    {"CHORUS_IB_HCA", List, "",
     "RDMA devices and ports: `mlx5_0:1`, `^mlx5_1`, `=rxe0`; each device a rail, QPs spread over "
     "them",
     0, 0, "", "NCCL_IB_HCA", Scope::Library, false, "every active port"},
    {"CHORUS_IB_GID_INDEX", Integer, "-1", "GID index (`-1`: a RoCE v2 IPv4 GID, else the first)",
     -1, 65536, "", "NCCL_IB_GID_INDEX"},
    {"CHORUS_IB_TC", Integer, "0", "traffic class of the queue pairs", 0, 255, "", "NCCL_IB_TC"},
    {"CHORUS_IB_SL", Integer, "0", "service level of the queue pairs", 0, 15, "", "NCCL_IB_SL"},
    {"CHORUS_IB_QPS_PER_CONNECTION", Integer, "1", "queue pairs per peer (striping paths)", 1, 64,
     "", "NCCL_IB_QPS_PER_CONNECTION"},
    {"CHORUS_IB_TIMEOUT", Integer, "20", "verbs ACK timeout exponent (4.096 us x 2^n)", 1, 31, "",
     "NCCL_IB_TIMEOUT"},
    {"CHORUS_IB_RETRY_CNT", Integer, "7", "verbs retransmissions before a queue pair fails", 0, 7,
     "", "NCCL_IB_RETRY_CNT"},
    {"CHORUS_IB_BLOCK", Size, "128K", "bytes of each striping block across the queue pairs", 4 * K,
     G},
    {"CHORUS_IB_BUFFER", Size, "2M", "bytes of each peer's receive ring (at least 2 blocks per QP)",
     4 * K, 2 * G - 1},
    {"CHORUS_IB_RNDV_BYTES", Size, "64K",
     "registered buffers: messages from this size go zero-copy by RDMA WRITE (0: never)", 0, G},
    {"CHORUS_IB_RNDV_STREAMED", Size, "0",
     "zero-copy messages: bytes of the head and of the tail streamed while the answer and the "
     "last write's completion travel (at most a quarter of the message each; 0: none, the "
     "default: measured slower in the Soft-RoCE guest)",
     0, G},
    {"CHORUS_IB_BOUNCE", Size, "16M",
     "registered buffers: the largest message of an in-place (or otherwise unlandable) "
     "reduction that goes zero-copy through each peer's bounce buffer, which grows to the "
     "largest such message from the ring's size (0: none, such messages stream)",
     0, 2 * G - 1},
    {"CHORUS_IB_REG_CACHE", Size, "256M", "registered user-buffer bytes kept when idle", 0,
     1024 * G},
    // --- UCX --------------------------------------------------------------------------------
    {"CHORUS_UCX_BLOCK", Size, "256K", "bytes per UCX message", 8, 64 * M},
    {"CHORUS_UCX_WINDOW", Integer, "8", "UCX blocks in flight per peer", 2, 1024},
    {"CHORUS_UCX_RNDV_BYTES", Size, "0",
     "registered buffers: messages from this size go zero-copy over UCX (tagged straight into "
     "the destination, not through the staging slots; 0: never)",
     0, G},
    {"CHORUS_UCX_BOUNCE", Size, "16M",
     "zero-copy messages over UCX: the largest one that lands in the receiver's bounce buffer "
     "when its destination cannot take it (an in-place reduction, a block still being sent)",
     0, G},
    {"CHORUS_UCX_PATHS", Integer, "1", "UCX endpoints per peer (striped by the path scheduler)", 1,
     64},
    {"CHORUS_UCX_NET_DEVICES", List, "",
     "one UCX worker per device, each a rail: `rail0,rail1`, `mlx5_0:1,mlx5_1:1` (`+` joins "
     "devices one worker shares); `auto`: one per interface CHORUS_SOCKET_IFNAME selects",
     0, 0, "", "", Scope::Library, false, "one worker, UCX's choice (UCX_NET_DEVICES)"},
    {"CHORUS_UCX_ERR_MODE", Enum, "peer",
     "`peer`: dead peers detected (over tcp); `none`: also shared memory", 0, 0, "peer|none"},
    {"CHORUS_UCX_PROGRESS_THREAD", Boolean, "1",
     "a thread drives UCX progress between calls (`0`, for measurement only: a peer waiting on a "
     "rank that is outside Chorus, e.g. in a barrier on the store, then fails at CHORUS_TIMEOUT, "
     "and UCX's connections accepted after set-up keep no CHORUS_KEEPALIVE)"},
    // --- chorus-run -------------------------------------------------------------------------
    {"CHORUS_RUN_GRACE", Duration, "15s",
     "chorus-run: how long the other ranks get to finish after one fails", 0,
     30 * 24 * 3600 * kSecond, "", "", Scope::Launcher},
    // --- the launch environment (chorus-run sets these; torchrun and mpirun names also work)
    {"CHORUS_RANK", Integer, "", "this process's rank (else RANK, OMPI_COMM_WORLD_RANK)", 0,
     1 << 30, "", "", Scope::Launch},
    {"CHORUS_WORLD_SIZE", Integer, "", "number of ranks (else WORLD_SIZE, OMPI_COMM_WORLD_SIZE)", 1,
     1 << 30, "", "", Scope::Launch},
    {"CHORUS_LOCAL_RANK", Integer, "", "rank among this host's (else LOCAL_RANK)", 0, 1 << 30, "",
     "", Scope::Launch},
    {"CHORUS_LOCAL_SIZE", Integer, "", "ranks on this host", 1, 1 << 30, "", "", Scope::Launch},
    {"CHORUS_ADDR", String, "", "rendezvous store address (else MASTER_ADDR)", 0, 0, "", "",
     Scope::Launch},
    {"CHORUS_PORT", Integer, "", "rendezvous store port (else MASTER_PORT)", 1, 65535, "", "",
     Scope::Launch},
    {"CHORUS_SECRET", String, "",
     "job secret of a launcher-run store (up to 64 hex digits, 256 bits)", 0, 0, "", "",
     Scope::Launch, true},
    {"CHORUS_JOB_SECRET", String, "",
     "passphrase every rank of a torchrun-style job shares (see Security); keeps other users out",
     0, 0, "", "", Scope::Launch, true},
    {"CHORUS_RESTART_COUNT", Integer, "",
     "how many times `chorus-run --max-restarts` restarted the job", 0, 1 << 30, "", "",
     Scope::Launch},
    {"CHORUS_REJOIN", Integer, "",
     "a replacement's epoch (`chorus-run --respawn` sets it; Communicator::joinFromEnv)", 1,
     1 << 30, "", "", Scope::Launch},
    {"CHORUS_REPORT_DIR", Path, "", "where each rank leaves its failure for chorus-run", 0, 0, "",
     "", Scope::Launch},
    // --- read by test harnesses only (declared so they are never "unknown") ---------------
    {"CHORUS_SCHEDULE_TABLE", String, "", "tests: print the schedule table", 0, 0, "", "",
     Scope::Test},
    {"CHORUS_SCHEDULE_TIMES", String, "", "tests: print schedule timings", 0, 0, "", "",
     Scope::Test},
    {"CHORUS_STRANGER_RANK", String, "", "tests: the stranger job's rank", 0, 0, "", "",
     Scope::Test},
    {"CHORUS_BED_NODE", String, "", "tests: the test bed's node", 0, 0, "", "", Scope::Test},
    {"CHORUS_BED_STATE", String, "", "tests: the test bed's state dir", 0, 0, "", "", Scope::Test},
    {"CHORUS_BED_GRACE", String, "", "tests: the test bed's grace", 0, 0, "", "", Scope::Test},
    {"CHORUS_MPIRUN", String, "", "tests: the mpirun to use", 0, 0, "", "", Scope::Test},
    {"CHORUS_SOFTROCE_WORK", String, "", "tests: the Soft-RoCE guest's work dir", 0, 0, "", "",
     Scope::Test},
    {"CHORUS_FUZZ_SECONDS", String, "", "tests: fuzzing time", 0, 0, "", "", Scope::Test},
    {"CHORUS_FUZZ_JOBS", String, "", "tests: fuzzing jobs", 0, 0, "", "", Scope::Test},
    {"CHORUS_SANITIZE_JOBS", String, "", "tests: sanitizer build jobs", 0, 0, "", "", Scope::Test},
    {"CHORUS_BUILD_DIR", String, "", "tests: the build directory", 0, 0, "", "", Scope::Test},
};

}  // namespace

const std::vector<Spec>& all() { return kSpecs; }

const Spec* find(std::string_view name) {
  for (const Spec& s : kSpecs)
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace chorus::settings
