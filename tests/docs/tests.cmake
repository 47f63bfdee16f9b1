# The documentation, tested: its links, its commands, its reference pages against the code.
set(DOC_TOOLS ${CMAKE_CURRENT_SOURCE_DIR}/docs)
# Relative links and #anchors resolve (README.md, CHANGELOG.md, docs/**).
add_test(NAME doc_links COMMAND ${Python3_EXECUTABLE} ${DOC_TOOLS}/doc_links.py ${CMAKE_SOURCE_DIR})
# Every fenced block is labelled; every `sh` block runs below or says why not; blocks tied to a
# checked-in file equal it.
add_test(NAME doc_blocks COMMAND ${Python3_EXECUTABLE} ${DOC_TOOLS}/doc_commands.py
                                 --source ${CMAKE_SOURCE_DIR} --lint)
# docs/reference/environment.md lists every BERTRT_* variable the code reads, and no other.
add_test(NAME env_reference COMMAND ${Python3_EXECUTABLE} ${DOC_TOOLS}/env_reference.py
                                    ${CMAKE_SOURCE_DIR})
if(TARGET bertrt_cli AND TARGET bertrt_convert_cli AND NOT CMAKE_CROSSCOMPILING)
  # docs/reference/cli.md holds every program's and subcommand's --help, verbatim.
  add_test(NAME cli_reference COMMAND ${Python3_EXECUTABLE} ${DOC_TOOLS}/cli_reference.py
           --page ${CMAKE_SOURCE_DIR}/docs/reference/cli.md
           --page ${CMAKE_SOURCE_DIR}/docs/reference/cli-training.md --bin-dir ${CMAKE_BINARY_DIR})
endif()
# Each page's commands, run as a reader runs them (tests/docs/doc_commands.py), one test a page.
# Not in sanitizer builds (the asan preset): the pages build C programs against the installed
# library and load it into python3, uninstrumented hosts that cannot load an ASan library.
if(TARGET bertrt_cli AND TARGET bertrt_convert_cli AND NOT CMAKE_CROSSCOMPILING
   AND NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize")
  get_filename_component(DOC_SHARED ${CMAKE_SOURCE_DIR}/../shared ABSOLUTE)
  file(GLOB_RECURSE DOC_PAGES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/*.md)
  foreach(page ${CMAKE_SOURCE_DIR}/README.md ${DOC_PAGES})
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${page})
    add_test(NAME doc_commands/${rel} COMMAND ${Python3_EXECUTABLE} ${DOC_TOOLS}/doc_commands.py
             --source ${CMAKE_SOURCE_DIR} --build ${CMAKE_BINARY_DIR} --shared ${DOC_SHARED} ${page})
    set_tests_properties(doc_commands/${rel} PROPERTIES TIMEOUT 600 LABELS "e2e;docs")
  endforeach()
  # Its `cmake --install build` writes the build's install_manifest.txt, as the C API tests do.
  set_tests_properties(doc_commands/docs/how-to/build.md PROPERTIES RESOURCE_LOCK cmake_install)
endif()
