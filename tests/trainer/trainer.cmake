# A script under tests/trainer/ run with chorus-run and chorus-train (label `trainer`).
function(trainer_script_test name script timeout)
  add_test(NAME ${name}
           COMMAND ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${script}
                   $<TARGET_FILE:chorus-run> $<TARGET_FILE:chorus-train>)
  set_tests_properties(${name} PROPERTIES LABELS trainer TIMEOUT ${timeout})
endfunction()

# chorus-train end to end (label `trainer`): only when the trainer was built (OpenBLAS, zlib).
if(TARGET chorus-train)
  trainer_script_test(trainer_bit_exact_resume bit_exact_resume.sh 300)
  # The checkpoint interval: Young-Daly from the measured save, and the saves it gives.
  trainer_script_test(trainer_young_daly young_daly.sh 300)
  # metrics.csv, the held-out evaluation and both tasks (the MLP and the transformer).
  trainer_script_test(trainer_eval_metrics eval_metrics.sh 300)
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

  # The gradient buckets' partition (makeBuckets) against hand-worked ones.
  add_executable(trainer_bucket_check ${CMAKE_CURRENT_LIST_DIR}/bucket_check.cpp
    ${PROJECT_SOURCE_DIR}/examples/dp_trainer/grad_sync.cpp
    ${PROJECT_SOURCE_DIR}/examples/dp_trainer/comm_thread.cpp
    ${PROJECT_SOURCE_DIR}/examples/dp_trainer/timeline.cpp)
  target_include_directories(trainer_bucket_check PRIVATE ${PROJECT_SOURCE_DIR}
                             ${PROJECT_SOURCE_DIR}/examples/dp_trainer)
  target_link_libraries(trainer_bucket_check PRIVATE chorus Threads::Threads)
  add_test(NAME trainer_bucket_check COMMAND trainer_bucket_check)
  set_tests_properties(trainer_bucket_check PROPERTIES LABELS trainer TIMEOUT 60)

  # The optimizers against PyTorch's, the learning-rate schedule against hand-worked values.
  add_executable(trainer_optimizer_check ${CMAKE_CURRENT_LIST_DIR}/optimizer_check.cpp
    ${PROJECT_SOURCE_DIR}/examples/dp_trainer/optimizer.cpp)
  target_include_directories(trainer_optimizer_check PRIVATE ${PROJECT_SOURCE_DIR})
  add_test(NAME trainer_optimizer_check COMMAND trainer_optimizer_check)
  set_tests_properties(trainer_optimizer_check PROPERTIES LABELS trainer TIMEOUT 60)

  # The models' sgemm against a double reference (OpenBLAS; cuBLAS with --gpu where the
  # trainer was built with it: skipped, exit 77, without a GPU).
  add_executable(trainer_gemm_check ${CMAKE_CURRENT_LIST_DIR}/gemm_check.cpp
    ${PROJECT_SOURCE_DIR}/examples/dp_trainer/gemm.cpp)
  target_include_directories(trainer_gemm_check PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(trainer_gemm_check PRIVATE PkgConfig::OPENBLAS)
  add_test(NAME trainer_gemm_check COMMAND trainer_gemm_check)
  set_tests_properties(trainer_gemm_check PROPERTIES LABELS trainer TIMEOUT 60)
  if(CHORUS_TRAINER_CUBLAS)
    find_package(CUDAToolkit REQUIRED)  # its targets are local to the directory that finds it
    target_sources(trainer_gemm_check PRIVATE ${PROJECT_SOURCE_DIR}/examples/dp_trainer/gemm_cublas.cpp)
    target_compile_definitions(trainer_gemm_check PRIVATE CHORUS_TRAINER_CUBLAS)
    target_link_libraries(trainer_gemm_check PRIVATE CUDA::cublas CUDA::cudart)
    add_test(NAME trainer_gemm_check_gpu COMMAND trainer_gemm_check --gpu)
    set_tests_properties(trainer_gemm_check_gpu PROPERTIES LABELS trainer TIMEOUT 60
                         SKIP_RETURN_CODE 77)
  endif()

  trainer_script_test(trainer_shrink_in_place shrink_in_place.sh 200)

  trainer_script_test(trainer_grow_back grow_back.sh 300)
endif()

add_test(NAME trainer_chorus_run_restarts
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/chorus_run_restarts.sh $<TARGET_FILE:chorus-run>)
set_tests_properties(trainer_chorus_run_restarts PROPERTIES LABELS "trainer;multiproc" TIMEOUT 120)

if(TARGET chorus-train)
  # A rank dies after some buckets of the step were stepped by the optimizer: the survivors
  # drop them and redo the step (bit-identical to a death before any bucket was averaged).
  trainer_script_test(trainer_shrink_mid_step shrink_mid_step.sh 200)
endif()
