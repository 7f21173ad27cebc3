# UCX transport suite, label `ucx` (`ctest -L ucx`): the multi-process collective suite
# and the kill test forced onto CHORUS_TRANSPORT=ucx on this host. Registered only when the
# UCX transport is built (libucx-dev found); else
# ucx.prerequisites stands in (skip, or failure under CI=true). Included from tests/multiproc/CMakeLists.txt,
# whose targets and variables (_run, chorus_collectives_test, chorus_kill_test) it uses.
#
# By default UCX handles peer failures (UCP_ERR_HANDLING_MODE_PEER), which on one host
# means its tcp transport; CHORUS_UCX_ERR_MODE=none runs over sysv/posix shared memory and
# cma instead, so both paths are covered. 1.5 minutes on 2 idle cores, 2.5 when loaded.

if(NOT (CHORUS_WITH_UCX AND CHORUS_UCX_SOURCES))
  # Not zero tests: a stand-in that skips, or fails under CI=true.
  add_test(NAME ucx.prerequisites COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/../missing_prerequisite.sh
           ucx "the UCX transport is not built (libucx-dev not found)")
  set_tests_properties(ucx.prerequisites PROPERTIES LABELS ucx TIMEOUT 30 SKIP_RETURN_CODE 77)
  return()
endif()

function(chorus_ucx_test name timeout)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS ucx TIMEOUT ${timeout}
                                          RESOURCE_LOCK chorus_multiproc)
endfunction()

set(_ucx_coll $<TARGET_FILE:chorus_collectives_test> --transport ucx)

add_executable(chorus_send_then_away_test send_then_away_test.cpp)
target_link_libraries(chorus_send_then_away_test PRIVATE chorus)
target_compile_options(chorus_send_then_away_test PRIVATE -Wall -Wextra)

# CHORUS_KEEPALIVE on UCX's tcp connections, both ends (UCX's connecting end through its
# configuration, the accepting end by Chorus: ucx_keepalive.hpp): 8 s is keepalive after 4 s
# idle, every 1 s, 4 probes (UCX's own: 10 s, 2 s, the kernel's 9; UCX's conversion can make
# these 9 s and 1 s: `~`); a UCX_TCP_KEEPIDLE of the user's wins over its part at both ends
# (3 ranks: each rank both connects and accepts); 0 leaves UCX's own (the accepting end
# off). Under a second each.
add_executable(chorus_ucx_keepalive_test ucx_keepalive_test.cpp)
target_link_libraries(chorus_ucx_keepalive_test PRIVATE chorus)
target_compile_options(chorus_ucx_keepalive_test PRIVATE -Wall -Wextra)
set(_ucx_ka ${_run} -n 2 --timeout 50 $<TARGET_FILE:chorus_ucx_keepalive_test>)
chorus_ucx_test(ucx.keepalive.mapped 60 ${_ucx_ka} --idle 4 --interval 1 --probes 4)
chorus_ucx_test(ucx.keepalive.user_idle_wins 60 ${_run} -n 3 --timeout 50
  $<TARGET_FILE:chorus_ucx_keepalive_test> --idle ~60 --interval 1 --probes 4)
chorus_ucx_test(ucx.keepalive.zero_leaves_ucx 60
  ${_ucx_ka} --idle ~10 --interval ~2 --probes kernel --accepting off)
set_tests_properties(ucx.keepalive.mapped PROPERTIES ENVIRONMENT CHORUS_KEEPALIVE=8s)
set_tests_properties(ucx.keepalive.user_idle_wins
  PROPERTIES ENVIRONMENT "CHORUS_KEEPALIVE=8s;UCX_TCP_KEEPIDLE=60s")
set_tests_properties(ucx.keepalive.zero_leaves_ucx PROPERTIES ENVIRONMENT CHORUS_KEEPALIVE=0s)
# Without the progress thread UCX wires the endpoints during the first collective, after
# start-up: the connections accepted then get keepalive from the engine's peer checks
# (UcxTransport::checkPeers, whose scans back off: 0, 0.2, 0.6, 1.4, 3.0 s). 3 ranks,
# 200 all-reduces 20 ms apart (4 s) before the check, past the scan at 3 s (~5 s).
chorus_ucx_test(ucx.keepalive.accepted_later 60 ${_run} -n 3 --timeout 50
  $<TARGET_FILE:chorus_ucx_keepalive_test> --idle 4 --interval 1 --probes 4 --settle-ms 4000)
set_tests_properties(ucx.keepalive.accepted_later
  PROPERTIES ENVIRONMENT "CHORUS_KEEPALIVE=8s;CHORUS_UCX_PROGRESS_THREAD=0")

# Every collective x type x op x count x in-place at 1..4 ranks, --quick at 5 and 8.
set(CHORUS_MP_FULL_RANKS_UCX 4 CACHE STRING "Largest rank count that runs the full ucx case list")
foreach(_n 1 2 3 4 5 8)
  set(_quick)
  if(_n GREATER CHORUS_MP_FULL_RANKS_UCX)
    set(_quick --quick)
  endif()
  chorus_ucx_test(ucx.collectives.np${_n} 300 ${_run} -n ${_n} --timeout 280 ${_ucx_coll} ${_quick})
endforeach()

# Shared-memory transports (no UCX failure handling), a forced algorithm mix, and a tiny
# window of 4 KiB blocks that keeps the credit flow control busy.
chorus_ucx_test(ucx.collectives.np3.errmode_none 300
  ${_run} -n 3 --timeout 280 ${_ucx_coll} --quick)
chorus_ucx_test(ucx.collectives.np5.errmode_none 300
  ${_run} -n 5 --timeout 280 ${_ucx_coll} --quick)
set_tests_properties(ucx.collectives.np3.errmode_none ucx.collectives.np5.errmode_none
  PROPERTIES ENVIRONMENT CHORUS_UCX_ERR_MODE=none)
chorus_ucx_test(ucx.collectives.np3.algos 300
  ${_run} -n 3 --timeout 280 ${_ucx_coll} --quick
  --algo allreduce:rd,allgather:bruck,reducescatter:rhd,broadcast:tree,reduce:rsg)
chorus_ucx_test(ucx.collectives.np3.tiny_window 300
  ${_run} -n 3 --timeout 280 ${_ucx_coll} --quick)
set_tests_properties(ucx.collectives.np3.tiny_window
  PROPERTIES ENVIRONMENT "CHORUS_UCX_WINDOW=2;CHORUS_UCX_BLOCK=4096")

# Striping over two endpoints per peer, to one worker (CHORUS_UCX_PATHS=2) and one on each
# of two workers (CHORUS_UCX_NET_DEVICES=lo,lo): all-reduce, all-gather and send/recv at
# np=2, every type and op on exact inputs, and both endpoints carrying each channel's bytes
# (the per-endpoint counters the channels log). About 5 s.
chorus_ucx_test(ucx.collectives.np2.paths2 120
  sh ${CMAKE_CURRENT_SOURCE_DIR}/ucx_paths_test.sh ${_run} $<TARGET_FILE:chorus_collectives_test>)

# One-sided transfers striped the same two ways: peer_push all-reduce and peer_ring
# all-gather on registered buffers, checked, and both endpoints carrying each channel's
# one-sided bytes (read and written, from the same counters). About 10 s.
chorus_ucx_test(ucx.onesided.paths2 120
  sh ${CMAKE_CURRENT_SOURCE_DIR}/ucx_onesided_paths_test.sh ${_run}
  $<TARGET_FILE:chorus_collectives_test>)

# Both ranks and all their threads under SCHED_FIFO on one CPU, two endpoints per peer: no
# thread may spin without blocking (the progress thread did, on a worker fd that stayed
# readable, and kept UCX's async thread off the CPU). About 2 s; skips without SCHED_FIFO.
chorus_ucx_test(ucx.fifo_one_cpu 60
  sh ${CMAKE_CURRENT_SOURCE_DIR}/ucx_fifo_test.sh ${_run} $<TARGET_FILE:chorus_collectives_test>)
set_tests_properties(ucx.fifo_one_cpu PROPERTIES SKIP_RETURN_CODE 77)

# A sender that leaves the library right after its send completes: the data must still
# arrive (the progress thread), in both error modes; tcp as the reference.
foreach(_mode peer none)
  chorus_ucx_test(ucx.send_then_away.errmode_${_mode} 60
    ${_run} -n 2 --timeout 50 $<TARGET_FILE:chorus_send_then_away_test> --transport ucx)
  set_tests_properties(ucx.send_then_away.errmode_${_mode}
    PROPERTIES ENVIRONMENT CHORUS_UCX_ERR_MODE=${_mode})
endforeach()
chorus_ucx_test(ucx.send_then_away.tcp_reference 60
  ${_run} -n 2 --timeout 50 $<TARGET_FILE:chorus_send_then_away_test> --transport tcp)

# A rank SIGKILLed mid-allReduce: every survivor reports an error naming it, no hang.
foreach(_case "4;2;peer" "4;0;peer" "3;1;peer" "5;4;peer" "4;2;none")
  list(GET _case 0 _n)
  list(GET _case 1 _victim)
  list(GET _case 2 _mode)
  set(_name ucx.kill.np${_n}.victim${_victim}.errmode_${_mode})
  chorus_ucx_test(${_name} 120
    $<TARGET_FILE:chorus_kill_test> --transport ucx --ranks ${_n} --victim ${_victim})
  set_tests_properties(${_name} PROPERTIES RUN_SERIAL TRUE ENVIRONMENT CHORUS_UCX_ERR_MODE=${_mode})
endforeach()
# The same with two workers per rank (two rails): the dead peer's endpoints on both fail.
chorus_ucx_test(ucx.kill.np4.victim2.two_workers 120
  $<TARGET_FILE:chorus_kill_test> --transport ucx --ranks 4 --victim 2)
set_tests_properties(ucx.kill.np4.victim2.two_workers
  PROPERTIES RUN_SERIAL TRUE ENVIRONMENT CHORUS_UCX_NET_DEVICES=lo,lo)

# One-sided collectives over UCP RMA (ucx_peer_memory.hpp: ucp_get_nbx, ucp_put_nbx and a
# flush), forced (the tuner never picks them over the network): every peer_* schedule, every
# type and op of the --quick cases, in and out of place, on registered and memAlloc buffers,
# in both error modes (tcp's emulated RMA; cma and shared memory with `none`), and with two
# workers per rank (one-sided transfers striped over both rails). --expect-algo fails a case
# that ran another algorithm. Then a rank killed under peer_push and under peer_twoshot.
# About 40 s.
set(_ucx_peer_algos
  allreduce:peer_push,allgather:peer_ring,reducescatter:peer_direct,broadcast:peer_direct,alltoall:peer_direct)
set(_ucx_peer_only --only allReduce,allGather,reduceScatter,broadcast,allToAll)
chorus_ucx_test(ucx.onesided.np2.twoshot.registered 300 ${_run} -n 2 --timeout 280 ${_ucx_coll}
  --quick --buffers registered --algo allreduce:peer_twoshot --only allReduce
  --expect-algo allreduce:peer_twoshot)
chorus_ucx_test(ucx.onesided.np3.all.registered 300 ${_run} -n 3 --timeout 280 ${_ucx_coll}
  --quick --buffers registered --algo ${_ucx_peer_algos} ${_ucx_peer_only}
  --expect-algo ${_ucx_peer_algos})
chorus_ucx_test(ucx.onesided.np4.all.memalloc.errmode_none 300 ${_run} -n 4 --timeout 280
  ${_ucx_coll} --quick --buffers memalloc --algo ${_ucx_peer_algos} ${_ucx_peer_only}
  --expect-algo ${_ucx_peer_algos})
set_tests_properties(ucx.onesided.np4.all.memalloc.errmode_none
  PROPERTIES ENVIRONMENT CHORUS_UCX_ERR_MODE=none)
chorus_ucx_test(ucx.onesided.np3.oneshot.two_workers 300 ${_run} -n 3 --timeout 280
  ${_ucx_coll} --quick --buffers registered --algo allreduce:peer_oneshot --only allReduce
  --expect-algo allreduce:peer_oneshot)
chorus_ucx_test(ucx.onesided.np2.ring.memalloc 300 ${_run} -n 2 --timeout 280 ${_ucx_coll}
  --quick --buffers memalloc --algo allreduce:peer_ring --only allReduce
  --expect-algo allreduce:peer_ring)
set_tests_properties(ucx.onesided.np3.oneshot.two_workers
  PROPERTIES ENVIRONMENT CHORUS_UCX_NET_DEVICES=lo,lo)
# 1, 5 and 9 ranks: a sample (--every 5) of the same.
foreach(_n 1 5 9)
  chorus_ucx_test(ucx.onesided.np${_n}.registered 300 ${_run} -n ${_n} --timeout 280 ${_ucx_coll}
    --quick --every 5 --buffers registered --algo ${_ucx_peer_algos} ${_ucx_peer_only}
    --expect-algo ${_ucx_peer_algos})
endforeach()
foreach(_algo peer_push peer_twoshot)
  set(_name ucx.onesided.kill.np3.victim1.${_algo})
  chorus_ucx_test(${_name} 120 $<TARGET_FILE:chorus_kill_test> --transport ucx --ranks 3
    --victim 1 --buffers registered --algo ${_algo} --count 65536 --kill-after-ms 2000
    --detect-limit-s 10 --deadline-s 40)
  set_tests_properties(${_name} PROPERTIES RUN_SERIAL TRUE)
endforeach()
# Without UCX's peer failure handling (errmode none: cma and shared memory) the death is
# found through the store.
chorus_ucx_test(ucx.onesided.kill.np3.victim1.peer_push.errmode_none 120
  $<TARGET_FILE:chorus_kill_test> --transport ucx --ranks 3 --victim 1 --buffers registered
  --algo peer_push --count 65536 --kill-after-ms 2000 --detect-limit-s 10 --deadline-s 40)
set_tests_properties(ucx.onesided.kill.np3.victim1.peer_push.errmode_none
  PROPERTIES RUN_SERIAL TRUE ENVIRONMENT CHORUS_UCX_ERR_MODE=none)

# The rendezvous (ucx_channel.hpp: registered messages of at least CHORUS_UCX_RNDV_BYTES go
# as tagged chunks straight into the destination), forced from 1 KiB on by
# ucx_rendezvous_test.sh: the whole --quick suite at 2 and 3 ranks on registered buffers
# (the chunks striped: np 2 over two endpoints to the peer's worker, np 3 over two workers,
# each a rail, with three endpoints each: a large transfer's 12 chunks run past the 8 in
# flight; every endpoint must carry a hundredth of the channel's zero-copy bytes), 4 on
# memAlloc buffers without UCX's peer failure handling (cma and shared memory), a sample at
# 6; every channel must have sent some bytes zero-copy. Then a rank killed while the ring's
# messages go zero-copy. About 60 s.
set(_ucx_rndv sh ${CMAKE_CURRENT_SOURCE_DIR}/ucx_rendezvous_test.sh $<TARGET_FILE:chorus-run>
  $<TARGET_FILE:chorus_collectives_test>)
chorus_ucx_test(ucx.rendezvous.np2.registered.paths2 300 ${_ucx_rndv} 2 --quick
  --buffers registered)
set_tests_properties(ucx.rendezvous.np2.registered.paths2
  PROPERTIES ENVIRONMENT CHORUS_UCX_PATHS=2)
chorus_ucx_test(ucx.rendezvous.np3.registered.two_workers.paths3 300 ${_ucx_rndv} 3 --quick
  --buffers registered)
set_tests_properties(ucx.rendezvous.np3.registered.two_workers.paths3
  PROPERTIES ENVIRONMENT "CHORUS_UCX_NET_DEVICES=lo,lo;CHORUS_UCX_PATHS=3")
chorus_ucx_test(ucx.rendezvous.np4.memalloc.errmode_none 300 ${_ucx_rndv} 4 --quick
  --buffers memalloc)
set_tests_properties(ucx.rendezvous.np4.memalloc.errmode_none
  PROPERTIES ENVIRONMENT CHORUS_UCX_ERR_MODE=none)
chorus_ucx_test(ucx.rendezvous.np6.registered 300 ${_ucx_rndv} 6 --quick --every 4
  --buffers registered)
chorus_ucx_test(ucx.rendezvous.kill.np3.victim1.ring 120 $<TARGET_FILE:chorus_kill_test>
  --transport ucx --ranks 3 --victim 1 --buffers registered --algo ring --count 1048576
  --kill-after-ms 2000 --detect-limit-s 10 --deadline-s 40)
set_tests_properties(ucx.rendezvous.kill.np3.victim1.ring
  PROPERTIES RUN_SERIAL TRUE ENVIRONMENT CHORUS_UCX_RNDV_BYTES=1K)
