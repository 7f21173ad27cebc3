# Sanitizer runs in the test command, labels `asan` (ASan + UBSan) and `tsan`: each builds
# its own instrumented tree (tests/sanitize.sh, under this build dir) and runs the unit and
# security tests and a set of multi-process tests there. A report exits the process
# non-zero, which fails the test. Off inside the instrumented trees themselves.
option(CHORUS_SANITIZER_TESTS "Register the asan/tsan labels (instrumented builds)" ON)
if(NOT CHORUS_SANITIZER_TESTS OR CHORUS_SANITIZE)
  return()
endif()
set(_sanitize ${CMAKE_CURRENT_LIST_DIR}/sanitize.sh)
foreach(_s asan tsan)
  set(_dir ${PROJECT_BINARY_DIR}/sanitize-${_s})
  add_test(NAME ${_s}.build COMMAND ${_sanitize} -B ${_dir} build ${_s})
  set_tests_properties(${_s}.build PROPERTIES LABELS ${_s} TIMEOUT 1800
                       FIXTURES_SETUP chorus_${_s} RESOURCE_LOCK chorus_multiproc)
  foreach(_phase unit multiproc)
    add_test(NAME ${_s}.${_phase} COMMAND ${_sanitize} -B ${_dir} run ${_s} ${_phase})
    set_tests_properties(${_s}.${_phase} PROPERTIES LABELS ${_s} TIMEOUT 1800
                         FIXTURES_REQUIRED chorus_${_s} RESOURCE_LOCK chorus_multiproc)
  endforeach()
endforeach()
