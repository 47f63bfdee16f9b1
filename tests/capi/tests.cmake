# The C API's package and bindings: the Python module's pytest suite over the built
# libbertrt.so, and the examples built against the INSTALLED package (tests/capi/examples_test.sh).
# Not in sanitizer builds (the asan preset): an uninstrumented host program (python3, the
# examples) cannot load an ASan library unless the runtime is preloaded; capi_test runs the C API
# under the sanitizers there.
if(CMAKE_CXX_FLAGS MATCHES "-fsanitize")
  return()
endif()
if(NOT CMAKE_CROSSCOMPILING AND TARGET bertrt_convert_cli)
  add_test(NAME python_api
           COMMAND /usr/bin/python3 -m pytest -q -p no:cacheprovider ${CMAKE_SOURCE_DIR}/python/tests)
  set_tests_properties(python_api PROPERTIES TIMEOUT 300 LABELS e2e ENVIRONMENT
    "PYTHONPATH=${CMAKE_SOURCE_DIR}/python;BERTRT_LIBRARY=$<TARGET_FILE:bertrt_shared>;BERTRT_CLI=$<TARGET_FILE:bertrt_cli>;BERTRT_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endif()
if(NOT CMAKE_CROSSCOMPILING AND TARGET bertrt_cli)
  get_filename_component(CAPI_DATA ${CMAKE_SOURCE_DIR}/../shared/data ABSOLUTE)
  add_test(NAME capi_examples_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/capi/examples_test.sh
           ${CMAKE_BINARY_DIR} $<TARGET_FILE:bertrt_cli> ${CAPI_DATA})
  set_tests_properties(capi_examples_e2e PROPERTIES TIMEOUT 600 LABELS e2e)
endif()
