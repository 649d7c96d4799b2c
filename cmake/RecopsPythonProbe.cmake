# cmake/RecopsPythonProbe.cmake: the Python probe of an optional binding (src/torch,
# src/tensorflow): the framework is located through the Python interpreter that imports it.
#
# recops_python_probe(<label> <module> <option> <script_var> <min_lines> <lines_var>)
#   Runs the Python code in variable <script_var> with Python3_EXECUTABLE (found quietly when unset). When it exits 0 and prints
#   at least <min_lines> non-empty lines, <lines_var> holds those lines (a list, in order).
#   Otherwise, with <option> (the binding's RECOPS_BUILD_* option) at AUTO, a status line says
#   "<label> binding OFF" and the calling CMakeLists.txt returns (this is a macro for that
#   reason); at any other value it is a fatal error naming <option> and <module>.
macro(recops_python_probe label module option script_var min_lines lines_var)
  if(NOT Python3_EXECUTABLE)
    find_package(Python3 COMPONENTS Interpreter QUIET)
  endif()
  set(_recops_probe_ok OFF)
  set(${lines_var} "")
  if(Python3_EXECUTABLE)
    execute_process(COMMAND "${Python3_EXECUTABLE}" -c "${${script_var}}"
                    RESULT_VARIABLE _recops_probe_rc OUTPUT_VARIABLE _recops_probe_out ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(_recops_probe_rc EQUAL 0)
      # Lines through a separator no path or flag holds, so that a ';' cannot split one.
      string(REPLACE "\n" "|" _recops_probe_out "${_recops_probe_out}")
      string(REGEX MATCHALL "[^|]+" ${lines_var} "${_recops_probe_out}")
      list(LENGTH ${lines_var} _recops_probe_n)
      if(_recops_probe_n GREATER_EQUAL ${min_lines})
        set(_recops_probe_ok ON)
      endif()
    endif()
  endif()
  if(NOT _recops_probe_ok)
    if(${option} STREQUAL "AUTO")
      message(STATUS "recops: ${label} binding OFF (${module} not importable by '${Python3_EXECUTABLE}')")
      return()
    endif()
    message(FATAL_ERROR "recops: ${option}=${${option}} but ${module} is not importable by "
                        "'${Python3_EXECUTABLE}' (set -DPython3_EXECUTABLE=...)")
  endif()
endmacro()
