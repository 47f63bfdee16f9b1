# Hostile model files: an editing library that takes a .brt apart and puts it back together with
# its checksums recomputed (brt_edit), the structure-aware mutations the fuzzer uses
# (brt_mutate), the generator of the hostile files (make_hostile_models), the unit test of the
# loader against them (hostile_load_test) and the CLI's end-to-end check
# (tests/e2e/hostile_model_test.sh).
add_library(bertrt_brt_edit STATIC ${CMAKE_CURRENT_SOURCE_DIR}/hostile/brt_edit.cpp
                                   ${CMAKE_CURRENT_SOURCE_DIR}/hostile/brt_mutate.cpp)
target_include_directories(bertrt_brt_edit PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/hostile)
target_link_libraries(bertrt_brt_edit PUBLIC bertrt)

add_executable(make_hostile_models ${CMAKE_CURRENT_SOURCE_DIR}/hostile/make_hostile_models.cpp)
target_link_libraries(make_hostile_models PRIVATE bertrt_brt_edit)

add_executable(hostile_load_test ${CMAKE_CURRENT_SOURCE_DIR}/hostile/hostile_load_test.cpp)
target_include_directories(hostile_load_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/unit)
target_link_libraries(hostile_load_test PRIVATE bertrt_test_util bertrt_brt_edit GTest::gtest
                                                GTest::gtest_main)
gtest_discover_tests(hostile_load_test PROPERTIES ENVIRONMENT "${TEST_ENV}" DISCOVERY_TIMEOUT 60)

set(HOSTILE_CONVERT "")
if(TARGET bertrt_convert_cli)
  set(HOSTILE_CONVERT $<TARGET_FILE:bertrt_convert_cli>)
endif()
add_test(NAME hostile_model_e2e
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/hostile_model_test.sh $<TARGET_FILE:bertrt_cli>
                 $<TARGET_FILE:make_hostile_models> ${HOSTILE_CONVERT})
# Release suite only (`long`): its bounds are a release build's CPU time and memory per refusal;
# under the sanitizers hostile_load_test runs the same files through the loader in-process.
set_tests_properties(hostile_model_e2e PROPERTIES TIMEOUT 600 LABELS "e2e;long" COST 150)
