# Tests labelled e2e run the CLI from a shell script (not through the cross-compiling
# emulator), so the emulated presets leave them out; platforms/ci_arm.sh runs the CLI on ARM.
# Those also labelled `long` run in the release suite only, not under ASan + UBSan (the asan test
# preset): CLI runs of many training steps, or over many files, whose code the unit tests run under
# the sanitizers (vulkan_test on lavapipe, the trainers', the converters', the task readers',
# write_faults_test, hostile_load_test), checking process-level behaviour (signals, kill -9 and
# resume, full disks and file-size limits, the PyTorch twin, Vulkan against cpu over whole runs,
# every task family end to end, per-file CPU and memory bounds). Under the sanitizers
# hostile_model_e2e, pretrain_e2e, convert_e2e, tasks_e2e and io_faults_e2e took 384 of the
# suite's 1,307 CPU-seconds, which put CI past its 45 minutes.
# CLI end-to-end checks on real data (tests/e2e/cli_test.sh).
get_filename_component(E2E_DATA ${CMAKE_SOURCE_DIR}/../shared/data ABSOLUTE)
add_test(NAME cli_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/cli_test.sh $<TARGET_FILE:bertrt_cli> ${E2E_DATA})
# COST: seconds under the sanitizers, so that ctest -j starts the longest first (a clean clone has
# no timing data, and the e2e tests, registered last, would otherwise finish alone on one core).
set_tests_properties(cli_e2e PROPERTIES TIMEOUT 600 LABELS e2e COST 95)
# Resume, kill -9, non-finite, memory options and plot of `bertrt pretrain` (tests/e2e/pretrain_test.sh).
add_test(NAME pretrain_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/pretrain_test.sh $<TARGET_FILE:bertrt_cli> ${E2E_DATA})
set_tests_properties(pretrain_e2e PROPERTIES TIMEOUT 900 LABELS "e2e;long" COST 80)
# Quantization in the CLI (tests/e2e/qat_cli_test.sh).
add_test(NAME qat_cli_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/qat_cli_test.sh $<TARGET_FILE:bertrt_cli> ${E2E_DATA})
set_tests_properties(qat_cli_e2e PROPERTIES TIMEOUT 600 LABELS e2e)
# The PyTorch twin of a pre-training run and the data statistics (tests/e2e/twin_test.sh).
if(TARGET bertrt_convert_cli)
  add_test(NAME twin_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/twin_test.sh $<TARGET_FILE:bertrt_cli>
           $<TARGET_FILE:bertrt_convert_cli> ${E2E_DATA})
  set_tests_properties(twin_e2e PROPERTIES TIMEOUT 600 LABELS "e2e;long")
endif()
# The Vulkan backend end to end against the cpu one (tests/e2e/vulkan_test.sh).
if(BERTRT_VULKAN)
  add_test(NAME vulkan_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/vulkan_test.sh $<TARGET_FILE:bertrt_cli> ${E2E_DATA})
  set_tests_properties(vulkan_e2e PROPERTIES TIMEOUT 1200 LABELS "e2e;long" COST 80)
endif()
# Disk full, file-size limit and read-only folders while writing every kind of output
# (tests/e2e/io_faults_test.sh).
if(TARGET bertrt_convert_cli)
  get_filename_component(E2E_CKPT ${CMAKE_SOURCE_DIR}/../shared/ckpt ABSOLUTE)
  add_test(NAME io_faults_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/io_faults_test.sh $<TARGET_FILE:bertrt_cli>
                                      $<TARGET_FILE:bertrt_convert_cli> ${E2E_DATA} ${E2E_CKPT})
  set_tests_properties(io_faults_e2e PROPERTIES TIMEOUT 600 LABELS "e2e;long" COST 45)
endif()
# SIGINT/SIGTERM during pretrain and finetune: resumable checkpoint, exit 130/143, resume equals an
# uninterrupted run (tests/e2e/signal_test.sh).
add_test(NAME signal_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/signal_test.sh $<TARGET_FILE:bertrt_cli> ${E2E_DATA})
set_tests_properties(signal_e2e PROPERTIES TIMEOUT 600 LABELS "e2e;long")

# One version number: project(VERSION) against the header, the library, both programs' --version,
# Python, pkg-config/CMake package files, the CPack file name and CHANGELOG.md
# (tests/e2e/version_test.sh). Not in sanitizer builds: python3 cannot load an ASan library.
if(TARGET bertrt_convert_cli AND BERTRT_PYTHON_EXECUTABLE AND NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize")
  set(_vulkan OFF)
  if(BERTRT_VULKAN)
    set(_vulkan ON)
  endif()
  add_test(NAME version_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/version_test.sh
           ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} $<TARGET_FILE:bertrt_cli>
           $<TARGET_FILE:bertrt_convert_cli> $<TARGET_FILE:bertrt_shared>
           ${BERTRT_PYTHON_EXECUTABLE} ${_vulkan})
  set_tests_properties(version_e2e PROPERTIES TIMEOUT 120 LABELS e2e)
endif()
# bertrt embed / rerank / eval --task sts|retrieval and the converter's sentence-transformers
# folders: outputs and bad input (tests/e2e/embed_test.sh).
if(TARGET bertrt_convert_cli)
  add_test(NAME embed_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/embed_test.sh
           $<TARGET_FILE:bertrt_cli> $<TARGET_FILE:bertrt_convert_cli> ${E2E_DATA} ${CMAKE_SOURCE_DIR})
  set_tests_properties(embed_e2e PROPERTIES TIMEOUT 300 LABELS e2e)
endif()
# bertrt serve on loopback: answers equal to embed / rerank / predict, faults, API keys, SIGTERM
# (tests/e2e/serve_test.sh, its HTTP client tests/e2e/serve_client.py).
if(TARGET bertrt_convert_cli AND BERTRT_SERVE)
  add_test(NAME serve_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/serve_test.sh
           $<TARGET_FILE:bertrt_cli> $<TARGET_FILE:bertrt_convert_cli> ${E2E_DATA} ${CMAKE_SOURCE_DIR})
  set_tests_properties(serve_e2e PROPERTIES TIMEOUT 300 LABELS e2e COST 30)
endif()
# bertrt search (index reuse and refusal, hits against brute-force cosine) and embed --precision
# (tests/e2e/search_test.sh).
add_test(NAME search_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/search_test.sh
         $<TARGET_FILE:bertrt_cli> ${E2E_DATA})
set_tests_properties(search_e2e PROPERTIES TIMEOUT 120 LABELS e2e)
# LoRA adapters: finetune --lora-r, --adapter on eval and predict, merge, refusals
# (tests/e2e/lora_test.sh).
add_test(NAME lora_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/lora_test.sh $<TARGET_FILE:bertrt_cli> ${E2E_DATA})
set_tests_properties(lora_e2e PROPERTIES TIMEOUT 300 LABELS e2e)
# LoRA over an int8 base (tests/e2e/lora_int8_test.sh).
add_test(NAME lora_int8_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/lora_int8_test.sh $<TARGET_FILE:bertrt_cli> ${E2E_DATA})
set_tests_properties(lora_int8_e2e PROPERTIES TIMEOUT 300 LABELS e2e)
# PEFT folders through the CLI: --to peft, --adapter FOLDER, refusals (tests/e2e/peft_test.sh).
if(TARGET bertrt_convert_cli)
  add_test(NAME peft_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/peft_test.sh $<TARGET_FILE:bertrt_cli>
           $<TARGET_FILE:bertrt_convert_cli> ${E2E_DATA})
  set_tests_properties(peft_e2e PROPERTIES TIMEOUT 300 LABELS e2e)
endif()
# Adapters over a shared base: --adapter on forward and embed against the merged model, refusals
# (tests/e2e/lora_adapters_test.sh).
add_test(NAME lora_adapters_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/lora_adapters_test.sh $<TARGET_FILE:bertrt_cli> ${E2E_DATA})
set_tests_properties(lora_adapters_e2e PROPERTIES TIMEOUT 300 LABELS e2e)
