# PyTorch reference files are generated fresh by ctest (fixture), never committed.
set(REF_DIR ${CMAKE_BINARY_DIR}/reference)
foreach(act gelu gelu_new)
  add_test(NAME reference_generate_${act}
    COMMAND ${CMAKE_COMMAND} -E env /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/reference/bert_reference.py
            --hidden-act ${act} --out ${REF_DIR}/bert_${act}.safetensors)
  set_tests_properties(reference_generate_${act} PROPERTIES FIXTURES_SETUP reference_files)
endforeach()
file(MAKE_DIRECTORY ${REF_DIR})
# bertrt-convert, `bertrt embed` / `rerank` and Python's Model.embed / rerank against the outputs
# sentence-transformers computed on the folders st_models.py writes (expected/
# sentence_transformers.json, st_upstream.py), and the export's round trip (st_check.py).
if(TARGET bertrt_convert_cli AND TARGET bertrt_shared AND NOT CMAKE_CROSSCOMPILING
   AND NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize")
  add_test(NAME sentence_transformers_reference
    COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${CMAKE_SOURCE_DIR}/python
            /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/reference/st_check.py
            --cli $<TARGET_FILE:bertrt_cli> --convert $<TARGET_FILE:bertrt_convert_cli>
            --library $<TARGET_FILE:bertrt_shared> --work ${REF_DIR}/st_check)
  set_tests_properties(sentence_transformers_reference PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       LABELS e2e)
endif()
# LoRA adapters through Hugging Face PEFT itself, where peft and transformers are installed
# (BERTRT_PEFT_PYTHONPATH: their site folder and st_upstream.py's stand-in, docs/explanation/
# testing.md); skipped (77) elsewhere. The checked-in values run always: peft_reference_test.
if(TARGET bertrt_convert_cli AND NOT CMAKE_CROSSCOMPILING AND NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize")
  add_test(NAME peft_round_trip
    COMMAND ${CMAKE_COMMAND} -E env HF_HUB_OFFLINE=1 /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/reference/peft_reference.py --round-trip
            --cli $<TARGET_FILE:bertrt_cli> --convert $<TARGET_FILE:bertrt_convert_cli>
            --work ${REF_DIR}/peft_round_trip)
  set_tests_properties(peft_round_trip PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS e2e)
endif()
