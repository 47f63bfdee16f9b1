# The fuzz targets (tests/fuzz/fuzz_*.cpp) in the normal build, without libFuzzer: one gtest that
# replays the seed corpora and every regression input through the same entry points.
if(TARGET bertrt_convert)
  file(GLOB FUZZ_TARGET_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_*.cpp)
  list(FILTER FUZZ_TARGET_SOURCES EXCLUDE REGEX "fuzz_(util|regression_test)\\.cpp$")
  add_executable(fuzz_regression_test ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_regression_test.cpp
    ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_util.cpp ${FUZZ_TARGET_SOURCES}
    ${CMAKE_SOURCE_DIR}/tools/cli/forward_input.cpp ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_util.cpp)
  target_include_directories(fuzz_regression_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/fuzz
    ${CMAKE_CURRENT_SOURCE_DIR}/unit)
  target_compile_definitions(fuzz_regression_test PRIVATE
    BERTRT_SOURCE_DIR_DEFAULT="${CMAKE_SOURCE_DIR}" BERTRT_BUILD_DIR_DEFAULT="${CMAKE_BINARY_DIR}")
  target_link_libraries(fuzz_regression_test PRIVATE bertrt_convert bertrt_serve GTest::gtest
    GTest::gtest_main)
  gtest_discover_tests(fuzz_regression_test PROPERTIES ENVIRONMENT "${TEST_ENV}" DISCOVERY_TIMEOUT 60)
endif()
