# The settings registry's checks (label settings; the gtests are in unit/settings_test.cpp).
add_test(NAME settings_readme_table
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/settings/readme_table_test.sh
                 $<TARGET_FILE:chorus-info> ${PROJECT_SOURCE_DIR}/README.md)
add_test(NAME settings_no_stray_getenv
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/settings/no_stray_getenv_test.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(settings_readme_table settings_no_stray_getenv PROPERTIES
                     LABELS "unit;settings" TIMEOUT 60)

# chorus-info's output, both forms, parsed (needs nlohmann-json3-dev, as chorus-info does).
find_package(nlohmann_json 3.10 QUIET)
if(TARGET chorus-info AND nlohmann_json_FOUND)
  add_executable(chorus_info_test ${CMAKE_CURRENT_SOURCE_DIR}/settings/chorus_info_test.cpp)
  target_link_libraries(chorus_info_test PRIVATE GTest::gtest GTest::gtest_main
                        nlohmann_json::nlohmann_json)
  target_compile_definitions(chorus_info_test PRIVATE CHORUS_INFO_PATH="$<TARGET_FILE:chorus-info>")
  add_dependencies(chorus_info_test chorus-info)
  if(TARGET chorus-perf)  # the end-to-end checks launch chorus-perf with chorus-run
    target_compile_definitions(chorus_info_test PRIVATE
                               CHORUS_RUN_PATH="$<TARGET_FILE:chorus-run>"
                               CHORUS_PERF_PATH="$<TARGET_FILE:chorus-perf>")
    add_dependencies(chorus_info_test chorus-run chorus-perf)
  endif()
  add_test(NAME chorus_info_output COMMAND chorus_info_test)
  set_tests_properties(chorus_info_output PROPERTIES LABELS "unit;settings" TIMEOUT 120
                       RESOURCE_LOCK chorus_multiproc)
endif()
