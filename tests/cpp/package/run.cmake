# ctest's cxx_package test: `cmake --install` the build into a scratch prefix, configure and build
# the consumer project next to this file against it, and run the README example it built.
# Arguments (-D): BUILD_DIR, WORK_DIR, EXAMPLE, GENERATOR, CXX.
file(REMOVE_RECURSE ${WORK_DIR})
foreach(_step
    "${CMAKE_COMMAND};--install;${BUILD_DIR};--prefix;${WORK_DIR}/prefix"
    "${CMAKE_COMMAND};-S;${CMAKE_CURRENT_LIST_DIR};-B;${WORK_DIR}/build;-G;${GENERATOR};-DCMAKE_CXX_COMPILER=${CXX};-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix;-DRECOPS_EXAMPLE_SOURCE=${EXAMPLE}"
    "${CMAKE_COMMAND};--build;${WORK_DIR}/build"
    "${WORK_DIR}/build/consumer_example")
  execute_process(COMMAND ${_step} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    string(REPLACE ";" " " _cmd "${_step}")
    message(FATAL_ERROR "failed (${_rc}): ${_cmd}\n${_out}")
  endif()
endforeach()
message(STATUS "installed package, consumer build and README example: ok")
