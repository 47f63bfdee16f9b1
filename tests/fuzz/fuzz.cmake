# libFuzzer targets (BERTRT_FUZZ=ON, clang only; scripts/fuzz.sh configures build-fuzz/ with
# clang++-14): one executable fuzz_<name> per tests/fuzz/fuzz_<name>.cpp, built by the target
# `fuzz_targets`. They link only the parsers and src/core, compiled again with
# -fsanitize=fuzzer-no-link,address,undefined: no kernels, no model, no trainer. The .brt editing
# and mutation code of tests/hostile goes with them (fuzz_brt_structured's custom mutator).
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "BERTRT_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14")
endif()
set(FUZZ_SANITIZE -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
set(FUZZ_DIR ${CMAKE_SOURCE_DIR}/tests/fuzz)
set(FUZZ_PARSER_SOURCES
  src/core/crc32c.cpp src/core/mapped_file.cpp src/core/float_decimal.cpp src/core/atomic_file.cpp
  src/core/utf8.cpp src/heads/embedding_config.cpp src/embed/embedding_index.cpp
  src/io/model_file_read.cpp src/io/tensor_record.cpp src/io/config_check.cpp src/io/safetensors.cpp
  src/io/segment_scan.cpp
  src/model/config.cpp src/model/params.cpp src/model/lora_sites.cpp
  src/tokenizer/basic_tokenizer.cpp src/tokenizer/encode.cpp src/tokenizer/offsets.cpp
  src/tokenizer/tokenizer.cpp src/tokenizer/unicode_text.cpp src/tokenizer/vocab.cpp
  src/tokenizer/wordpiece.cpp
  src/tasks/conll.cpp src/tasks/squad.cpp src/tasks/tsv_task.cpp src/tasks/tsv_fields.cpp src/tasks/tsv_presets.cpp
  src/tasks/task_definition.cpp
  src/train/corpus.cpp src/train/sentence_split.cpp
  tools/convert/pickle.cpp tools/convert/torch_reader.cpp tools/convert/sstable.cpp
  tools/convert/tf_bundle.cpp tools/convert/hf_config.cpp tools/convert/json_fields.cpp
  tools/convert/tf_bert_names.cpp
  tools/convert/checkpoint.cpp tools/convert/torch_state_dict.cpp
  tools/cli/forward_input.cpp
  src/serve/api.cpp
  tests/fuzz/fuzz_util.cpp
  tests/hostile/brt_edit.cpp tests/hostile/brt_mutate.cpp)
list(TRANSFORM FUZZ_PARSER_SOURCES PREPEND ${CMAKE_SOURCE_DIR}/)
add_library(bertrt_fuzz_parsers STATIC ${FUZZ_PARSER_SOURCES})
add_dependencies(bertrt_fuzz_parsers bertrt_schema)
target_compile_options(bertrt_fuzz_parsers PUBLIC ${FUZZ_SANITIZE} -fsanitize=fuzzer-no-link)
# FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION (the libFuzzer/OSS-Fuzz convention): the SSTable reader
# skips its block crc32c so mutations reach the block parser (tools/convert/sstable.cpp).
target_compile_definitions(bertrt_fuzz_parsers PUBLIC BERTRT_LIBFUZZER=1
  FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION=1)
target_include_directories(bertrt_fuzz_parsers PUBLIC ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}
  ${CMAKE_SOURCE_DIR}/tools ${GEN_DIR} ${FUZZ_DIR} ${CMAKE_SOURCE_DIR}/tests/hostile)
pkg_check_modules(FUZZ_LIBZIP REQUIRED IMPORTED_TARGET libzip)
find_path(FUZZ_SNAPPY_INCLUDE_DIR snappy.h REQUIRED)
find_library(FUZZ_SNAPPY_LIBRARY snappy REQUIRED)
target_include_directories(bertrt_fuzz_parsers PUBLIC ${FUZZ_SNAPPY_INCLUDE_DIR})
target_link_libraries(bertrt_fuzz_parsers PUBLIC PkgConfig::UTF8PROC flatbuffers::flatbuffers
  fmt::fmt nlohmann_json::nlohmann_json PkgConfig::FUZZ_LIBZIP ${FUZZ_SNAPPY_LIBRARY})

file(GLOB FUZZ_TARGETS CONFIGURE_DEPENDS ${FUZZ_DIR}/fuzz_*.cpp)
list(FILTER FUZZ_TARGETS EXCLUDE REGEX "fuzz_(util|regression_test)\\.cpp$")
add_custom_target(fuzz_targets)
foreach(src ${FUZZ_TARGETS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE bertrt_fuzz_parsers)
  target_link_options(${name} PRIVATE ${FUZZ_SANITIZE} -fsanitize=fuzzer)
  add_dependencies(fuzz_targets ${name})
endforeach()
