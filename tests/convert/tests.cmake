# bertrt-convert end to end (tests/e2e/convert_test.sh): the CLI on checkpoints made by
# tests/reference/make_hf_models.py, its usage and input errors, exit codes and atomic outputs.
if(TARGET bertrt_convert_cli)
  add_test(NAME convert_e2e
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/convert_test.sh $<TARGET_FILE:bertrt_convert_cli>
            $<TARGET_FILE:bertrt_cli> ${CMAKE_CURRENT_SOURCE_DIR}/reference/make_hf_models.py)
  set_tests_properties(convert_e2e PROPERTIES TIMEOUT 600 LABELS e2e ENVIRONMENT "${TEST_ENV}")
endif()
