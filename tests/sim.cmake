# chorus-sim: the replay engine's compression, the fabric model, the cost formulas, the
# failure/checkpoint model. Label `sim` (`ctest -L sim`).
file(GLOB SIM_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/sim/*.cpp)
add_executable(chorus_sim_tests ${SIM_TEST_SOURCES})
target_link_libraries(chorus_sim_tests PRIVATE chorus_internal GTest::gtest GTest::gtest_main)
add_dependencies(chorus_sim_tests chorus-sim)
gtest_discover_tests(chorus_sim_tests PROPERTIES LABELS sim TIMEOUT 600 DISCOVERY_TIMEOUT 60)
# chorus-sim end to end: the tuner's pick is the fabric simulator's fastest at 256 GPUs.
add_test(NAME sim_tool_tuner_agrees COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/sim/tool_test.sh
                                            $<TARGET_FILE:chorus-sim>)
set_tests_properties(sim_tool_tuner_agrees PROPERTIES LABELS sim TIMEOUT 300)
# chorus_sim_plot.py draws its PNGs from chorus-sim CSVs: valid PNGs of the expected size
# whose stored series equal the CSVs' and whose lines are drawn (Debian's matplotlib).
add_test(NAME sim_plot COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/sim/plot_test.py
                               $<TARGET_FILE:chorus-sim> ${PROJECT_SOURCE_DIR}/tools/chorus_sim_plot.py)
set_tests_properties(sim_plot PROPERTIES LABELS sim TIMEOUT 120)
# chorus-sim against a recorded netns-bed measurement (perf/data/sim_vs_bed/): deterministic,
# no bed run; the agreement reached when recorded must hold.
add_test(NAME sim_bed_agreement COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/sim/bed_agreement_test.sh
                                        $<TARGET_FILE:chorus-sim> ${PROJECT_SOURCE_DIR})
set_tests_properties(sim_bed_agreement PROPERTIES LABELS sim TIMEOUT 120)
# chorus-sim --timeline: a consistent trace, with the steps the engine runs (4 ranks).
if(TARGET chorus-run AND TARGET chorus-perf)
  add_test(NAME sim_timeline_matches_engine
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/sim/timeline_test.sh $<TARGET_FILE:chorus-sim>
                   $<TARGET_FILE:chorus-run> $<TARGET_FILE:chorus-perf>
                   ${CMAKE_CURRENT_SOURCE_DIR}/sim/timeline_check.py)
  set_tests_properties(sim_timeline_matches_engine PROPERTIES LABELS "sim;multiproc" TIMEOUT 300)
endif()
