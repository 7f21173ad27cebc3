# Topology tests, label `topology` (`ctest -L topology`, about 1.5 minutes here): the unit
# tests on recorded hwloc XML, sysfs trees and topology files, and the network-namespace
# test bed (tests/testbed/netns_bed.sh: needs root; skipped, status 77, without it).

add_test(NAME topology.unit
         COMMAND chorus_unit_tests
                 --gtest_filter=TopologyDetect.*:TopologyFileTest.*:ClusterTopologyTest.*:HostIdentity.*)
set_tests_properties(topology.unit PROPERTIES LABELS topology TIMEOUT 120)

# chorus-topo's flags end to end (recorded XML, sysfs tree and topology file; --cluster
# under chorus-run with a topology file). A few seconds.
if(TARGET chorus-topo AND TARGET chorus-run)
  add_test(NAME topology.cli
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/multiproc/topo_cli_test.sh
                   $<TARGET_FILE:chorus-topo> $<TARGET_FILE:chorus-run> ${PROJECT_SOURCE_DIR})
  set_tests_properties(topology.cli PROPERTIES LABELS "topology;multiproc" TIMEOUT 120
                       RESOURCE_LOCK chorus_multiproc)
endif()

if(TARGET chorus_collectives_test AND TARGET chorus-topo)
  set(_bed ${CMAKE_CURRENT_SOURCE_DIR}/testbed/bed_test.sh)
  # name; nodes; ranks per node; NIC rate; suite arguments (the full case list at 4 ranks,
  # --quick at 9, as the multiproc tcp tests do)
  foreach(_case "2x2;2;2;1gbit" "3x3;3;3;1gbit;--quick" "3x3.ring;3;3;2gbit;--quick;--algo;ring")
    list(GET _case 0 _name)
    list(GET _case 1 _nodes)
    list(GET _case 2 _ranks)
    list(GET _case 3 _rate)
    set(_args ${_case})
    list(REMOVE_AT _args 0 1 2 3)
    add_test(NAME topology.bed.collectives.${_name}
             COMMAND ${_bed} collectives ${_nodes} ${_ranks} ${_rate} ${PROJECT_BINARY_DIR} ${_args})
    set_tests_properties(topology.bed.collectives.${_name} PROPERTIES
      LABELS topology TIMEOUT 300 SKIP_RETURN_CODE 77 RESOURCE_LOCK chorus_multiproc)
  endforeach()
  # Between the nodes over ucx, one UCX worker per NIC: correct, and both NICs carry the
  # bytes. About 10 s.
  if(CHORUS_WITH_UCX AND CHORUS_UCX_SOURCES)
    add_test(NAME topology.bed.collectives.2x2.ucx
             COMMAND ${_bed} ucx 2 2 1gbit ${PROJECT_BINARY_DIR} --quick)
    set_tests_properties(topology.bed.collectives.2x2.ucx PROPERTIES
      LABELS "topology;ucx" TIMEOUT 300 SKIP_RETURN_CODE 77 RESOURCE_LOCK chorus_multiproc)
  endif()
  # CHORUS_KEEPALIVE on both ends of UCX's connections between hosts (the peers' addresses,
  # not loopback) and on both NICs' workers. About 2 s.
  if(CHORUS_WITH_UCX AND CHORUS_UCX_SOURCES)
    add_test(NAME topology.bed.keepalive.2x2.ucx
             COMMAND ${_bed} ucx_keepalive 2 ${PROJECT_BINARY_DIR})
    set_tests_properties(topology.bed.keepalive.2x2.ucx PROPERTIES
      LABELS "topology;ucx" TIMEOUT 120 SKIP_RETURN_CODE 77 RESOURCE_LOCK chorus_multiproc)
  endif()
  # Binding and yielding count the ranks on the machine, not on a node (namespace). A few s.
  add_test(NAME topology.bed.bind.2x2 COMMAND ${_bed} bind 2 2 ${PROJECT_BINARY_DIR})
  set_tests_properties(topology.bed.bind.2x2 PROPERTIES
    LABELS topology TIMEOUT 120 SKIP_RETURN_CODE 77 RESOURCE_LOCK chorus_multiproc)
  # A node cut off from the network (its NICs down, its ranks alive): every rank fails
  # within seconds of CHORUS_KEEPALIVE, naming the other side. About 30 s.
  if(TARGET chorus_fault_trial)
    add_test(NAME topology.bed.cutoff.2x2 COMMAND ${_bed} cutoff 2 ${PROJECT_BINARY_DIR})
    set_tests_properties(topology.bed.cutoff.2x2 PROPERTIES
      LABELS "topology;fault" TIMEOUT 180 SKIP_RETURN_CODE 77 RESOURCE_LOCK chorus_multiproc)
    # Keepalive off: the stall's diagnosis names the unreachable side instead; on a ring,
    # rank 1's deadline first: it names rank 3 as cut off through rank 0's report, which
    # says so only once rewritten when rank 0's probes found rank 3's host silent
    # (Engine::noteSilence). Deadlines 14 s (rank 1) and 16 s (the others). About 26 s.
    add_test(NAME topology.bed.cutoff.2x2.no_keepalive
             COMMAND ${_bed} cutoff 2 ${PROJECT_BINARY_DIR} 0 tcp follower)
    set_tests_properties(topology.bed.cutoff.2x2.no_keepalive PROPERTIES
      LABELS "topology;fault" TIMEOUT 180 SKIP_RETURN_CODE 77 RESOURCE_LOCK chorus_multiproc)
    # The same over ucx, the all-reduce hierarchical (each node-0 rank waits first for the
    # rank across the cut, not its neighbour): the ucx transport probes UCX's tcp
    # connections. About 25 s.
    if(CHORUS_WITH_UCX AND CHORUS_UCX_SOURCES)
      add_test(NAME topology.bed.cutoff.2x2.ucx
               COMMAND ${_bed} cutoff 2 ${PROJECT_BINARY_DIR} 0 ucx)
      set_tests_properties(topology.bed.cutoff.2x2.ucx PROPERTIES
        LABELS "topology;fault;ucx" TIMEOUT 180 SKIP_RETURN_CODE 77 RESOURCE_LOCK chorus_multiproc)
      # A rank stopped on a live host is never called unreachable. About 35 s.
      add_test(NAME topology.bed.stop.2x2.ucx COMMAND ${_bed} stop 2 ${PROJECT_BINARY_DIR} ucx)
      set_tests_properties(topology.bed.stop.2x2.ucx PROPERTIES
        LABELS "topology;fault;ucx" TIMEOUT 180 SKIP_RETURN_CODE 77 RESOURCE_LOCK chorus_multiproc)
    endif()
  endif()
  # The cut under torch.distributed (torch's store, Chorus's tcp transport). About 15 s.
  if(TARGET _chorus_torch)
    add_test(NAME topology.bed.cutoff.2x2.torch
             COMMAND ${_bed} torch_cutoff 2 ${PROJECT_BINARY_DIR})
    set_tests_properties(topology.bed.cutoff.2x2.torch PROPERTIES
      LABELS "topology;fault;torch" TIMEOUT 180 SKIP_RETURN_CODE 77 RESOURCE_LOCK chorus_multiproc)
    # The same over ucx: a rank whose UCX connection timed out (Endpoint timeout) names the
    # rank across the cut once, as cut off (UcxChannel's PeerError::unreachable); one with
    # data in flight fails at the group's deadline and names it from its probes, also where
    # torch's store sits across the cut (CommImpl::reportWaiting reads its report back).
    # About 36 s.
    if(CHORUS_WITH_UCX AND CHORUS_UCX_SOURCES)
      add_test(NAME topology.bed.cutoff.2x2.torch.ucx
               COMMAND ${_bed} torch_cutoff 2 ${PROJECT_BINARY_DIR} ucx)
      set_tests_properties(topology.bed.cutoff.2x2.torch.ucx PROPERTIES
        LABELS "topology;fault;torch;ucx" TIMEOUT 180 SKIP_RETURN_CODE 77
        RESOURCE_LOCK chorus_multiproc)
    endif()
  endif()
  add_test(NAME topology.bed.cleanup COMMAND ${_bed} cleanup ${PROJECT_BINARY_DIR})
  set_tests_properties(topology.bed.cleanup PROPERTIES
    LABELS topology TIMEOUT 120 SKIP_RETURN_CODE 77 RESOURCE_LOCK chorus_multiproc)
endif()
