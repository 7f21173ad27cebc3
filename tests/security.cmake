# Security tests, label `security`: HMAC vectors (libcrypto's wiring), the challenge-response
# handshake, what a stranger on the host can reach (store port, shm segments, rendezvous
# file, listeners), the store's rules (rank claims, key owners, caps, the uid check),
# striping chunk headers, and strangers and insiders knocking on a running 3-rank job (tcp).
add_executable(chorus_security_tests ${CMAKE_CURRENT_SOURCE_DIR}/security/crypto_test.cpp
                                     ${CMAKE_CURRENT_SOURCE_DIR}/security/exposure_test.cpp
                                     ${CMAKE_CURRENT_SOURCE_DIR}/security/framing_test.cpp
                                     ${CMAKE_CURRENT_SOURCE_DIR}/security/store_rules_test.cpp)
target_link_libraries(chorus_security_tests PRIVATE chorus_internal GTest::gtest GTest::gtest_main)
gtest_discover_tests(chorus_security_tests TEST_PREFIX security.
                     PROPERTIES LABELS security TIMEOUT 120 DISCOVERY_TIMEOUT 60)

add_executable(chorus_stranger_test ${CMAKE_CURRENT_SOURCE_DIR}/security/stranger_job_test.cpp)
target_link_libraries(chorus_stranger_test PRIVATE chorus_internal)
add_test(NAME security.strangers.tcp.np3 COMMAND chorus_stranger_test)
set_tests_properties(security.strangers.tcp.np3 PROPERTIES LABELS security TIMEOUT 180
                                                           RESOURCE_LOCK chorus_multiproc)
