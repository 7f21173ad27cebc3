# chorus-train end to end (label `trainer`): only when the trainer was built (OpenBLAS, zlib).
if(TARGET chorus-train)
  add_test(NAME trainer_bit_exact_resume
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/bit_exact_resume.sh
                   $<TARGET_FILE:chorus-run> $<TARGET_FILE:chorus-train>)
  set_tests_properties(trainer_bit_exact_resume PROPERTIES LABELS trainer TIMEOUT 300)
endif()
