# Fuzzing, label `fuzz`: libFuzzer harnesses (fuzz/*_fuzz.cpp) for the store's frames
# (server and client side), the unique id, the topology and tune files, the call
# fingerprint check, the connection handshake (the tcp transport's and the store's
# hello), the tcp transport's hellos and address lists, the striped stream's chunk
# headers (the tcp transport's data framing) and the ib and ucx transports' connection
# records. They need clang, so they live in their own build (fuzz/run_fuzz.sh configures
# it with CHORUS_FUZZ=ON); the main build only registers the CTest entries that drive that
# script: one build, then a repeatable run each: the seed corpus (fuzz/corpus/NAME) and
# CHORUS_FUZZ_RUNS inputs mutated from seed 1. Timed runs with fresh seeds are by hand
# (`tests/fuzz/run_fuzz.sh all SECONDS`).
file(GLOB _chorus_fuzzers CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/fuzz/*_fuzz.cpp)
if(CHORUS_FUZZ)
  add_custom_target(chorus_fuzzers)
  foreach(_src ${_chorus_fuzzers})
    get_filename_component(_name ${_src} NAME_WE)
    add_executable(${_name} ${_src})
    target_link_libraries(${_name} PRIVATE chorus_internal)
    if(_name STREQUAL "ib_record_fuzz")  # the decoder alone, without the ib transport
      if(NOT (IBVERBS_LIBRARY AND IBVERBS_INCLUDE))
        message(FATAL_ERROR "ib_record_fuzz needs libibverbs-dev")
      endif()
      target_sources(${_name} PRIVATE ${PROJECT_SOURCE_DIR}/transports/ib/ib_qp.cpp)
      target_include_directories(${_name} PRIVATE ${IBVERBS_INCLUDE})
      target_link_libraries(${_name} PRIVATE ${IBVERBS_LIBRARY})
    endif()
    if(_name STREQUAL "ucx_record_fuzz")  # the record alone: it needs no UCX
      target_sources(${_name} PRIVATE ${PROJECT_SOURCE_DIR}/transports/ucx/ucx_record.cpp)
    endif()
    target_compile_options(${_name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${_name} PRIVATE -fsanitize=fuzzer)
    add_dependencies(chorus_fuzzers ${_name})
  endforeach()
else()
  set(CHORUS_FUZZ_RUNS 20000 CACHE STRING "Inputs per harness in `ctest -L fuzz` (seed 1)")
  set(_script ${CMAKE_CURRENT_LIST_DIR}/fuzz/run_fuzz.sh -B ${PROJECT_BINARY_DIR}/fuzz-build)
  add_test(NAME fuzz.build COMMAND ${_script} build)
  set_tests_properties(fuzz.build PROPERTIES LABELS fuzz TIMEOUT 1800 FIXTURES_SETUP chorus_fuzz
                                             RESOURCE_LOCK chorus_multiproc)
  foreach(_src ${_chorus_fuzzers})
    get_filename_component(_name ${_src} NAME_WE)
    string(REGEX REPLACE "_fuzz$" "" _name ${_name})
    add_test(NAME fuzz.${_name} COMMAND ${_script} run ${_name} runs=${CHORUS_FUZZ_RUNS})
    set_tests_properties(fuzz.${_name} PROPERTIES LABELS fuzz TIMEOUT 300
                         FIXTURES_REQUIRED chorus_fuzz RESOURCE_LOCK chorus_multiproc)
  endforeach()
endif()
