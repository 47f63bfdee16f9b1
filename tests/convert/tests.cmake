# bertrt-convert end to end (tests/e2e/convert_test.sh): the CLI on checkpoints made by
# tests/reference/make_hf_models.py, its usage and input errors, exit codes and atomic outputs.
if(TARGET bertrt_convert_cli)
  add_test(NAME convert_e2e
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/convert_test.sh $<TARGET_FILE:bertrt_convert_cli>
            $<TARGET_FILE:bertrt_cli> ${CMAKE_CURRENT_SOURCE_DIR}/reference/make_hf_models.py)
  set_tests_properties(convert_e2e PROPERTIES TIMEOUT 600 LABELS "e2e;long" COST 55 ENVIRONMENT "${TEST_ENV}")
endif()
# Hostile configs on real checkpoints: quick, clear errors with small peak memory
# (tests/e2e/hostile_config_test.sh).
if(TARGET bertrt_convert_cli)
  get_filename_component(CKPT_DIR ${CMAKE_SOURCE_DIR}/../shared/ckpt ABSOLUTE)
  add_test(NAME hostile_config_e2e
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/hostile_config_test.sh $<TARGET_FILE:bertrt_convert_cli> ${CKPT_DIR})
  set_tests_properties(hostile_config_e2e PROPERTIES TIMEOUT 300 LABELS e2e)
endif()
