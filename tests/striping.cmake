# Striping (flow load-balancing, src/striping): the pure logic over simulated paths, with
# the topology tests (label `topology`) and in `unit`. Under a second.
add_test(NAME topology.striping.unit
         COMMAND chorus_unit_tests --gtest_filter=Striping.*:PathScheduler.*)
set_tests_properties(topology.striping.unit PROPERTIES LABELS "topology;unit" TIMEOUT 60)

# In the netns bed: one NIC of two slows to a tenth mid-transfer; results stay right and
# the fast NIC carries most of the bytes after it (the kernel's NIC counters).
if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND TARGET chorus-perf)
  add_test(NAME topology.striping.slow_nic
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/testbed/slow_nic_test.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(topology.striping.slow_nic PROPERTIES LABELS topology TIMEOUT 300
                       SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
  # The same over ucx, one UCX worker per NIC (CHORUS_UCX_NET_DEVICES=auto). About 35 s.
  if(CHORUS_WITH_UCX AND CHORUS_UCX_SOURCES)
    add_test(NAME topology.striping.slow_nic.ucx
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/testbed/slow_nic_test.sh ${PROJECT_BINARY_DIR} 300
                     ucx)
    set_tests_properties(topology.striping.slow_nic.ucx PROPERTIES LABELS "topology;ucx"
                         TIMEOUT 300 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
  endif()
endif()
