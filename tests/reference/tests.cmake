# PyTorch reference files are generated fresh by ctest (fixture), never committed.
set(REF_DIR ${CMAKE_BINARY_DIR}/reference)
foreach(act gelu gelu_new)
  add_test(NAME reference_generate_${act}
    COMMAND ${CMAKE_COMMAND} -E env /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/reference/bert_reference.py
            --hidden-act ${act} --out ${REF_DIR}/bert_${act}.safetensors)
  set_tests_properties(reference_generate_${act} PROPERTIES FIXTURES_SETUP reference_files)
endforeach()
file(MAKE_DIRECTORY ${REF_DIR})
