# Striping (flow load-balancing, src/striping): the pure logic over simulated paths, with
# the topology tests (label `topology`) and in `unit`. Under a second.
add_test(NAME topology.striping.unit
         COMMAND chorus_unit_tests --gtest_filter=Striping.*:PathScheduler.*)
set_tests_properties(topology.striping.unit PROPERTIES LABELS "topology;unit" TIMEOUT 60)
