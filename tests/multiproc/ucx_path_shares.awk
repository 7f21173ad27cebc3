# ucx_path_shares.awk: checks the UCX channels' per-endpoint counters, as each channel logs
# them at INFO when it closes (src/striping/stripe_stats.cpp):
#   CHORUS INFO ucx rank R -> P path K (NAME): sent N B, received N B, direct N B, read N B,
#   written N B, weight W%, X MB/s
# Fed those lines; prints a FAIL line for each fault and exits 1 on any. The tests that use
# it: ucx_paths_test.sh, ucx_onesided_paths_test.sh, ucx_rendezvous_test.sh.
#   -v fields=F[,F...]  the counters that make up the bytes checked (sent; read,written; direct)
#   -v what=TEXT        how FAIL lines name those bytes ("one-sided", "zero-copy")
#   -v paths=N          every channel has endpoints 0..N-1 and no more; 0: those reported
#   -v channels=N       exactly N channels reported; 0: not checked
#   -v moved=1          every channel moved some of those bytes
#   -v received=1       what a rank received on an endpoint is what its peer sent on it
# Where a channel has several endpoints, each must carry at least a hundredth of the
# channel's bytes. Not a balance check: the path scheduler stripes by measured rates, so the
# shares are a matter of timing (8.7% was seen on CI's 2 cores with 3 ranks; a quarter of an
# even share failed there once); an endpoint left out carries nothing. How the shares follow
# the rates is tested with a fake clock (tests/unit/striping_test.cpp, PathScheduler.*).
BEGIN { nfields = split(fields, counted, ",") }
/CHORUS INFO ucx rank [0-9]+ -> [0-9]+ path / {
  bytes = 0
  for (i = 1; i < NF; ++i) {
    if ($i == "rank") r = $(i + 1)
    if ($i == "->") p = $(i + 1)
    if ($i == "path") k = $(i + 1)
    if ($i == "sent") s = $(i + 1)
    if ($i == "received") v = $(i + 1)
    for (j = 1; j <= nfields; ++j) if ($i == counted[j]) bytes += $(i + 1)
  }
  c = r " " p
  carried[c " " k] = bytes; sent[c " " k] = s; recv[c " " k] = v
  total[c] += bytes; ++endpoints[c]
}
END {
  bad = 0; n = 0
  for (c in total) {
    ++n; split(c, rp, " "); label = "rank " rp[1] " -> " rp[2]
    if (moved && total[c] == 0) { print "FAIL: " label " moved nothing " what; bad = 1 }
    count = paths ? paths : endpoints[c]
    if (paths && endpoints[c] != paths) {
      print "FAIL: " label " reported " endpoints[c] " endpoints, expected " paths; bad = 1
    }
    for (k = 0; k < count; ++k) {
      key = c " " k
      if (!(key in carried)) { print "FAIL: no counters for " label " endpoint " k; bad = 1; continue }
      if (count > 1 && carried[key] * 100 < total[c]) {
        print "FAIL: " label " moved " carried[key] " of " total[c] " B " what " on endpoint " k
        bad = 1
      }
      back = rp[2] " " rp[1] " " k
      if (received && recv[back] != sent[key]) {
        print "FAIL: rank " rp[2] " received " recv[back] " B on endpoint " k " but rank " rp[1] " sent " sent[key]
        bad = 1
      }
    }
  }
  if (channels && n != channels) { print "FAIL: " n " channels reported, expected " channels; bad = 1 }
  exit bad
}
