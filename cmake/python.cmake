# The Python module `parray` (python/): the compiled part `parray._parray`
# (pybind11) and the pure-Python package around it, laid out under
# ${CMAKE_BINARY_DIR}/python so that PYTHONPATH=<build>/python imports it.
#
# Optional like every other part: built when a Python 3 interpreter with its
# development headers and pybind11 are found, otherwise reported at configure
# time and skipped (the C++ library, the CLI and `parray list` do not need it).
# pybind11 comes from its CMake package (Debian: pybind11-dev) or, where none
# is installed, from a directory of its headers named by
# PARRAY_PYBIND11_INCLUDE_DIR (a copy of /usr/include/pybind11's parent).
option(PARRAY_BUILD_PYTHON "Build the Python module when Python 3 headers and pybind11 are found" ON)
set(PARRAY_PYBIND11_INCLUDE_DIR "" CACHE PATH
    "A directory holding pybind11/pybind11.h, used when no pybind11 package is found")

# The interpreter that will run the module and its tests: the first of
# `python3` on PATH and /usr/bin/python3 that imports NumPy (a PATH python3
# without NumPy, such as a bare pyenv one, would skip every test).
function(parray_pick_python out)
  find_program(path_python3 NAMES python3 NO_CACHE)
  foreach(candidate ${path_python3} /usr/bin/python3)
    if(EXISTS "${candidate}")
      execute_process(COMMAND "${candidate}" -c "import numpy" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
      if(rc EQUAL 0)
        set(${out} "${candidate}" PARENT_SCOPE)
        return()
      endif()
    endif()
  endforeach()
endfunction()

set(PARRAY_HAVE_PYTHON 0)
if(PARRAY_BUILD_PYTHON)
  if(NOT Python3_EXECUTABLE)
    parray_pick_python(picked)
    if(picked)
      set(Python3_EXECUTABLE "${picked}" CACHE FILEPATH "The Python 3 interpreter of the parray module")
    endif()
  endif()
  find_package(Python3 QUIET COMPONENTS Interpreter Development.Module)
  find_package(pybind11 CONFIG QUIET)
  set(parray_pybind11_include "")
  if(pybind11_FOUND)
    set(parray_pybind11_include ${pybind11_INCLUDE_DIRS})
  elseif(PARRAY_PYBIND11_INCLUDE_DIR AND EXISTS "${PARRAY_PYBIND11_INCLUDE_DIR}/pybind11/pybind11.h")
    set(parray_pybind11_include ${PARRAY_PYBIND11_INCLUDE_DIR})
  endif()
  if(NOT Python3_Development.Module_FOUND)
    message(STATUS "parray: the Python module is off: Python 3 development headers not found (Debian: python3-dev)")
  elseif(NOT parray_pybind11_include)
    message(STATUS
      "parray: the Python module is off: pybind11 not found (Debian: pybind11-dev, or PARRAY_PYBIND11_INCLUDE_DIR)")
  else()
    set(PARRAY_HAVE_PYTHON 1)
    message(STATUS "parray: Python module for ${Python3_EXECUTABLE} (${Python3_VERSION})")
  endif()
else()
  message(STATUS "parray: the Python module is off: PARRAY_BUILD_PYTHON=OFF")
endif()

if(PARRAY_HAVE_PYTHON)
  set(PARRAY_PYTHON_DIR ${CMAKE_BINARY_DIR}/python)
  file(GLOB PARRAY_PYTHON_SOURCES CONFIGURE_DEPENDS python/src/*.cpp)
  if(NOT PARRAY_HAVE_CUDA)
    list(FILTER PARRAY_PYTHON_SOURCES EXCLUDE REGEX "_cuda\\.cpp$")
  endif()
  Python3_add_library(parray_python MODULE WITH_SOABI ${PARRAY_PYTHON_SOURCES})
  target_include_directories(parray_python SYSTEM PRIVATE ${parray_pybind11_include})
  target_link_libraries(parray_python PRIVATE parray)
  target_compile_definitions(parray_python PRIVATE PARRAY_PYTHON_CUDA=${PARRAY_HAVE_CUDA})
  target_compile_options(parray_python PRIVATE ${PARRAY_WARNINGS})
  # pybind11's own advice: its types hidden, so that two modules built with
  # different pybind11 versions do not share them.
  # One unity source: each binding file is short and pybind11's headers are
  # most of its compile time (the pip install compiles them too).
  set_target_properties(parray_python PROPERTIES OUTPUT_NAME _parray CXX_VISIBILITY_PRESET hidden
                        LIBRARY_OUTPUT_DIRECTORY ${PARRAY_PYTHON_DIR}/parray UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 0)
  file(GLOB PARRAY_PYTHON_PACKAGE CONFIGURE_DEPENDS python/parray/*.py)
  foreach(file ${PARRAY_PYTHON_PACKAGE})
    get_filename_component(name ${file} NAME)
    configure_file(${file} ${PARRAY_PYTHON_DIR}/parray/${name} COPYONLY)
  endforeach()
endif()

# The pytest suite (python/tests) through ctest, with the module built here
# first on PYTHONPATH: Python.pytest everything but the GPU tests, and with
# CUDA Python.pytest.gpu those (PyTorch, CuPy). run_tests.py skips (77) naming
# what is missing: pytest or NumPy, or for the GPU tests a GPU library and GPU.
if(PARRAY_HAVE_PYTHON AND PARRAY_BUILD_TESTS)
  enable_testing()
  set(parray_python_test_env "PYTHONPATH=${PARRAY_PYTHON_DIR};PYTHONDONTWRITEBYTECODE=1")
  set(parray_run_python_tests ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/python/tests/run_tests.py)
  # `pip install` as a user runs it: a fresh virtual environment, the module
  # built by setup.py (CPU only), imported from outside the source tree.
  add_test(NAME Python.PipInstall
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/python_pip_install.sh ${Python3_EXECUTABLE}
                   ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_BINARY_DIR}/pip-install-check)
  set_tests_properties(Python.PipInstall PROPERTIES LABELS "cpu;install" SKIP_RETURN_CODE 77 TIMEOUT 1200)
  add_test(NAME Python.pytest COMMAND ${parray_run_python_tests})
  set_tests_properties(Python.pytest PROPERTIES LABELS cpu SKIP_RETURN_CODE 77 TIMEOUT 300 ENVIRONMENT
                       "${parray_python_test_env}")
  if(PARRAY_HAVE_CUDA)
    add_test(NAME Python.pytest.gpu COMMAND ${parray_run_python_tests} --gpu)
    set_tests_properties(Python.pytest.gpu PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 300 ENVIRONMENT
                         "${parray_python_test_env}")
  endif()
endif()
