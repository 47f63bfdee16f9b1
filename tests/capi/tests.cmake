# The C API's package and bindings: the Python module's pytest suite over the built
# libbertrt.so, and the examples built against the INSTALLED package (tests/capi/examples_test.sh).
# Not in sanitizer builds (the asan preset): an uninstrumented host program (python3, the
# examples) cannot load an ASan library unless the runtime is preloaded; capi_test runs the C API
# under the sanitizers there.
if(CMAKE_CXX_FLAGS MATCHES "-fsanitize")
  return()
endif()
if(NOT CMAKE_CROSSCOMPILING AND TARGET bertrt_convert_cli)
  # The Python the install targets (platforms/install.cmake: one with NumPy).
  set(_python ${BERTRT_PYTHON_EXECUTABLE})
  if(NOT _python)
    set(_python /usr/bin/python3)
  endif()
  add_test(NAME python_api
           COMMAND ${_python} -m pytest -q -p no:cacheprovider ${CMAKE_SOURCE_DIR}/python/tests)
  set_tests_properties(python_api PROPERTIES TIMEOUT 300 LABELS e2e ENVIRONMENT
    "PYTHONPATH=${CMAKE_SOURCE_DIR}/python;BERTRT_LIBRARY=$<TARGET_FILE:bertrt_shared>;BERTRT_CLI=$<TARGET_FILE:bertrt_cli>;BERTRT_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endif()
if(NOT CMAKE_CROSSCOMPILING AND TARGET bertrt_cli)
  get_filename_component(CAPI_DATA ${CMAKE_SOURCE_DIR}/../shared/data ABSOLUTE)
  add_test(NAME capi_examples_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/capi/examples_test.sh
           ${CMAKE_BINARY_DIR} $<TARGET_FILE:bertrt_cli> ${CAPI_DATA})
  # Both install tests write the build's install_manifest.txt: one at a time.
  set_tests_properties(capi_examples_e2e PROPERTIES TIMEOUT 600 LABELS e2e RESOURCE_LOCK cmake_install)
  # examples/quickstart.c and quickstart.py as their headers say, from an installed prefix.
  if(BERTRT_PYTHON_EXECUTABLE)
    add_test(NAME capi_quickstart_e2e COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/capi/quickstart_test.sh
             ${CMAKE_BINARY_DIR} $<TARGET_FILE:bertrt_cli> ${BERTRT_PYTHON_EXECUTABLE})
    set_tests_properties(capi_quickstart_e2e PROPERTIES TIMEOUT 600 LABELS e2e
                         RESOURCE_LOCK cmake_install)
  endif()
endif()
