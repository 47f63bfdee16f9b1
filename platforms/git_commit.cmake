# Run at build time (cmake -P, by the bertrt_git_commit target of CMakeLists.txt): writes OUT, a
# header defining BERTRT_GIT_COMMIT as the source tree's abbreviated commit, or "" when the
# sources are not a git checkout of their own (a release tarball, even one unpacked inside some
# other repository). The file is rewritten only when the commit changed, so a build after a
# commit recompiles one source file (src/core/version.cpp).
#   cmake -DSRC=<source dir> -DGIT=<git or empty> -DOUT=<header> -P git_commit.cmake
set(commit "")
if(GIT)
  execute_process(COMMAND ${GIT} -C ${SRC} rev-parse --show-toplevel
                  OUTPUT_VARIABLE top RESULT_VARIABLE rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc EQUAL 0)
    file(REAL_PATH "${top}" top)
    file(REAL_PATH "${SRC}" src)
    if(top STREQUAL src)
      execute_process(COMMAND ${GIT} -C ${SRC} rev-parse --short=7 HEAD
                      OUTPUT_VARIABLE commit RESULT_VARIABLE rc ERROR_QUIET
                      OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(NOT rc EQUAL 0)
        set(commit "")
      endif()
    endif()
  endif()
endif()
set(content "// Written by platforms/git_commit.cmake at build time.\n#define BERTRT_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL content)
  file(WRITE ${OUT} "${content}")
endif()
