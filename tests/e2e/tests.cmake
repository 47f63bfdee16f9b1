# Tests labelled e2e run the CLI from a shell script (not through the cross-compiling
# emulator), so the emulated presets leave them out; platforms/ci_arm.sh runs the CLI on ARM.
# Those also labelled `long` run in the release suite only, not under ASan + UBSan (the asan test
# preset): CLI runs of many training steps whose code the unit tests run under the sanitizers
# (vulkan_test on lavapipe, the trainers'), checking process-level behaviour (signals, the PyTorch
# twin, Vulkan against cpu over whole runs); they were 550 of the ASan suite's 1,380 CPU-seconds.
# CLI end-to-end checks on real data (tests/e2e/cli_test.sh).
get_filename_component(E2E_DATA ${CMAKE_SOURCE_DIR}/../shared/data ABSOLUTE)
add_test(NAME cli_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/cli_test.sh $<TARGET_FILE:bertrt_cli> ${E2E_DATA})
set_tests_properties(cli_e2e PROPERTIES TIMEOUT 600 LABELS e2e)
# Resume, kill -9, non-finite, memory options and plot of `bertrt pretrain` (tests/e2e/pretrain_test.sh).
add_test(NAME pretrain_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/pretrain_test.sh $<TARGET_FILE:bertrt_cli> ${E2E_DATA})
set_tests_properties(pretrain_e2e PROPERTIES TIMEOUT 900 LABELS e2e)
# Quantization in the CLI (tests/e2e/qat_cli_test.sh).
add_test(NAME qat_cli_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/qat_cli_test.sh $<TARGET_FILE:bertrt_cli> ${E2E_DATA})
set_tests_properties(qat_cli_e2e PROPERTIES TIMEOUT 600 LABELS e2e)
# The PyTorch twin of a pre-training run and the data statistics (tests/e2e/twin_test.sh, issue #16).
if(TARGET bertrt_convert_cli)
  add_test(NAME twin_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/twin_test.sh $<TARGET_FILE:bertrt_cli>
           $<TARGET_FILE:bertrt_convert_cli> ${E2E_DATA})
  set_tests_properties(twin_e2e PROPERTIES TIMEOUT 600 LABELS "e2e;long")
endif()
# The Vulkan backend end to end against the cpu one (tests/e2e/vulkan_test.sh, issue #12).
if(BERTRT_VULKAN)
  add_test(NAME vulkan_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/vulkan_test.sh $<TARGET_FILE:bertrt_cli> ${E2E_DATA})
  set_tests_properties(vulkan_e2e PROPERTIES TIMEOUT 1200 LABELS "e2e;long")
endif()
# Disk full, file-size limit and read-only folders while writing every kind of output
# (tests/e2e/io_faults_test.sh).
if(TARGET bertrt_convert_cli)
  get_filename_component(E2E_CKPT ${CMAKE_SOURCE_DIR}/../shared/ckpt ABSOLUTE)
  add_test(NAME io_faults_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/io_faults_test.sh $<TARGET_FILE:bertrt_cli>
                                      $<TARGET_FILE:bertrt_convert_cli> ${E2E_DATA} ${E2E_CKPT})
  set_tests_properties(io_faults_e2e PROPERTIES TIMEOUT 600 LABELS e2e)
endif()
# SIGINT/SIGTERM during pretrain and finetune: resumable checkpoint, exit 130/143, resume equals an
# uninterrupted run (tests/e2e/signal_test.sh).
add_test(NAME signal_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/signal_test.sh $<TARGET_FILE:bertrt_cli> ${E2E_DATA})
set_tests_properties(signal_e2e PROPERTIES TIMEOUT 600 LABELS "e2e;long")

