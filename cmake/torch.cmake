# parray's PyTorch operators in C++ (python/src/torch/operators.cpp): a
# shared library `_parray_torch.so` beside the Python module, loaded by
# `parray.torch` with torch.ops.load_library.
#
# Optional: built when the Python module is and the module's interpreter
# imports a PyTorch whose C++ headers and libraries are installed with it
# (a pip wheel has them). Where it is not built, parray.torch defines the same
# operators in Python, slower per call (docs/python.md).
option(PARRAY_BUILD_TORCH "Build parray's C++ PyTorch operators when PyTorch is found" ON)

set(PARRAY_HAVE_TORCH 0)
if(PARRAY_HAVE_PYTHON AND PARRAY_BUILD_TORCH)
  # One line each: the libstdc++ PyTorch runs with, include directories
  # (;-separated), library directory, C++11 ABI flag, CUDA build (1/0), version.
  set(parray_torch_query [=[
import os, torch, torch.utils.cpp_extension as ext
print(next((l.split()[-1] for l in open("/proc/self/maps") if "/libstdc++.so" in l), "none"))
print(";".join(ext.include_paths()))
print(os.path.join(os.path.dirname(torch.__file__), "lib"))
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(int(torch.version.cuda is not None))
print(torch.__version__)
]=])
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "${parray_torch_query}" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(STATUS "parray: C++ PyTorch operators off: ${Python3_EXECUTABLE} does not import torch")
  else()
    string(REPLACE "\n" ";" lines "${out}")
    list(LENGTH lines n)
    math(EXPR last "${n} - 1")
    math(EXPR i_version "${last}")
    math(EXPR i_cuda "${last} - 1")
    math(EXPR i_abi "${last} - 2")
    math(EXPR i_lib "${last} - 3")
    list(GET lines ${i_version} torch_version)
    list(GET lines ${i_cuda} torch_cuda)
    list(GET lines ${i_abi} torch_abi)
    list(GET lines ${i_lib} torch_lib_dir)
    list(GET lines 0 torch_libstdcxx)
    math(EXPR n_includes "${i_lib} - 1")
    list(SUBLIST lines 1 ${n_includes} torch_includes)
    find_library(PARRAY_TORCH_LIB torch HINTS ${torch_lib_dir} NO_DEFAULT_PATH)
    find_library(PARRAY_TORCH_CPU_LIB torch_cpu HINTS ${torch_lib_dir} NO_DEFAULT_PATH)
    find_library(PARRAY_C10_LIB c10 HINTS ${torch_lib_dir} NO_DEFAULT_PATH)
    find_library(PARRAY_C10_CUDA_LIB c10_cuda HINTS ${torch_lib_dir} NO_DEFAULT_PATH)
    if(NOT torch_abi EQUAL 1)
      # libparray's API passes std::string; both sides must use one ABI.
      message(STATUS "parray: C++ PyTorch operators off: PyTorch ${torch_version} uses the pre-C++11 string ABI")
    elseif(NOT PARRAY_TORCH_LIB OR NOT PARRAY_TORCH_CPU_LIB OR NOT PARRAY_C10_LIB)
      message(STATUS "parray: C++ PyTorch operators off: no libtorch/libc10 in ${torch_lib_dir}")
    elseif(NOT EXISTS "${torch_lib_dir}/../include/torch/library.h")
      message(STATUS "parray: C++ PyTorch operators off: PyTorch ${torch_version} has no C++ headers")
    else()
      set(PARRAY_HAVE_TORCH 1)
    endif()
  endif()
endif()

if(PARRAY_HAVE_TORCH)
  set(parray_torch_cuda 0)
  if(PARRAY_HAVE_CUDA AND torch_cuda AND PARRAY_C10_CUDA_LIB)
    set(parray_torch_cuda 1)
  endif()
  message(STATUS "parray: C++ PyTorch operators for PyTorch ${torch_version} (CUDA kernels: ${parray_torch_cuda})")
  add_library(parray_torch SHARED python/src/torch/operators.cpp)
  target_include_directories(parray_torch SYSTEM PRIVATE ${torch_includes})
  target_link_libraries(parray_torch PRIVATE parray ${PARRAY_TORCH_LIB} ${PARRAY_TORCH_CPU_LIB} ${PARRAY_C10_LIB})
  # The C++ runtime PyTorch runs with, linked ahead of the compiler's: one whose
  # libstdc++ puts some of its code into what it links (a static supplement
  # to the shared library) gives the library a second copy of that code,
  # whose locale facets clash with the process's (formatting a number then
  # crashed). The Python module too: it shares the process with PyTorch.
  if(EXISTS "${torch_libstdcxx}")
    target_link_libraries(parray_torch PRIVATE ${torch_libstdcxx})
    target_link_libraries(parray_python PRIVATE ${torch_libstdcxx})
  endif()
  if(parray_torch_cuda)
    target_link_libraries(parray_torch PRIVATE ${PARRAY_C10_CUDA_LIB} CUDA::cudart)
  endif()
  target_compile_definitions(parray_torch PRIVATE PARRAY_TORCH_CUDA=${parray_torch_cuda})
  target_compile_options(parray_torch PRIVATE ${PARRAY_WARNINGS})
  # Loaded into a process that has imported torch: its libraries are found
  # there; the rpath serves a load before that.
  set_target_properties(parray_torch PROPERTIES OUTPUT_NAME _parray_torch PREFIX ""
                        BUILD_RPATH "${torch_lib_dir}" INSTALL_RPATH "${torch_lib_dir}"
                        LIBRARY_OUTPUT_DIRECTORY ${PARRAY_PYTHON_DIR}/parray)
endif()
