# chorus-train end to end (label `trainer`): only when the trainer was built (OpenBLAS, zlib).
if(TARGET chorus-train)
  add_test(NAME trainer_bit_exact_resume
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/bit_exact_resume.sh
                   $<TARGET_FILE:chorus-run> $<TARGET_FILE:chorus-train>)
  set_tests_properties(trainer_bit_exact_resume PROPERTIES LABELS trainer TIMEOUT 300)
endif()

# The deterministic setting the trainer relies on (CHORUS_DETERMINISTIC, Options).
add_executable(deterministic_choice_test ${CMAKE_CURRENT_LIST_DIR}/deterministic_choice.cpp)
target_link_libraries(deterministic_choice_test PRIVATE chorus_internal)
add_test(NAME trainer_deterministic_choice
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/deterministic_choice.sh
                 $<TARGET_FILE:chorus-run> $<TARGET_FILE:deterministic_choice_test>)
set_tests_properties(trainer_deterministic_choice PROPERTIES LABELS trainer TIMEOUT 120)

if(TARGET chorus-train)
  # The models' backward passes against finite differences.
  add_executable(trainer_grad_check ${CMAKE_CURRENT_LIST_DIR}/grad_check.cpp
    ${PROJECT_SOURCE_DIR}/examples/dp_trainer/mlp.cpp
    ${PROJECT_SOURCE_DIR}/examples/dp_trainer/gemm.cpp
    ${PROJECT_SOURCE_DIR}/examples/dp_trainer/transformer.cpp)
  target_include_directories(trainer_grad_check PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(trainer_grad_check PRIVATE PkgConfig::OPENBLAS)
  add_test(NAME trainer_grad_check COMMAND trainer_grad_check)
  set_tests_properties(trainer_grad_check PROPERTIES LABELS trainer TIMEOUT 60)

  add_test(NAME trainer_shrink_in_place
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/shrink_in_place.sh
                   $<TARGET_FILE:chorus-run> $<TARGET_FILE:chorus-train>)
  set_tests_properties(trainer_shrink_in_place PROPERTIES LABELS trainer TIMEOUT 200)

  add_test(NAME trainer_grow_back
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/grow_back.sh
                   $<TARGET_FILE:chorus-run> $<TARGET_FILE:chorus-train>)
  set_tests_properties(trainer_grow_back PROPERTIES LABELS trainer TIMEOUT 300)
endif()

add_test(NAME trainer_chorus_run_restarts
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/chorus_run_restarts.sh $<TARGET_FILE:chorus-run>)
set_tests_properties(trainer_chorus_run_restarts PROPERTIES LABELS "trainer;multiproc" TIMEOUT 120)

if(TARGET chorus-train)
  # A rank dies after some buckets of the step were stepped by the optimizer: the survivors
  # drop them and redo the step (bit-identical to a death before any bucket was averaged).
  add_test(NAME trainer_shrink_mid_step
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/shrink_mid_step.sh
                   $<TARGET_FILE:chorus-run> $<TARGET_FILE:chorus-train>)
  set_tests_properties(trainer_shrink_mid_step PROPERTIES LABELS trainer TIMEOUT 200)
endif()
