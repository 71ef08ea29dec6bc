# `cmake --install` puts parray in a prefix as a library: the headers (with
# the generated config.hpp), libparray.a, libparray_blas.so, the parray tool,
# a CMake package (find_package(parray) -> parray::parray, and parray::mpi
# where MPI was built) and a pkg-config file (parray.pc). The version is the
# project's (CMakeLists.txt), written into all of them.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(PARRAY_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/parray)

# The header-only core points at the source and build trees when built here,
# at the prefix's include/ once installed.
target_include_directories(parray_headers INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
install(DIRECTORY include/parray DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/generated/parray/config.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/parray)

set(PARRAY_EXPORTED parray_headers parray)
if(PARRAY_HAVE_MPI)
  set_target_properties(parray_mpi PROPERTIES EXPORT_NAME mpi)
  list(APPEND PARRAY_EXPORTED parray_mpi)
endif()
install(TARGETS ${PARRAY_EXPORTED} EXPORT parrayTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS parray_blas LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS parray_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# parrayc and parray_add_executable (cmake/parrayc.cmake): parray::parrayc.
install(TARGETS parrayc EXPORT parrayTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES cmake/parrayc.cmake DESTINATION ${PARRAY_CMAKE_DIR})
install(EXPORT parrayTargets NAMESPACE parray:: DESTINATION ${PARRAY_CMAKE_DIR})

configure_package_config_file(cmake/parrayConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/parrayConfig.cmake
                              INSTALL_DESTINATION ${PARRAY_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/parrayConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/parrayConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/parrayConfigVersion.cmake
        DESTINATION ${PARRAY_CMAKE_DIR})

# pkg-config: libparray.a is static, so Libs lists what it links against.
set(PARRAY_PC_LIBS "-lparray ${OpenMP_CXX_FLAGS} -lpthread")
if(PARRAY_HAVE_CUDA)
  string(APPEND PARRAY_PC_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -Wl,-rpath,${CUDAToolkit_LIBRARY_DIR} -lcudart -ldl")
  if(PARRAY_HAVE_NCCL)
    string(APPEND PARRAY_PC_LIBS " ${PARRAY_NCCL_LIB}")
  endif()
endif()
set(PARRAY_PC_CFLAGS "${OpenMP_CXX_FLAGS}")
if(PARRAY_HAVE_CUDA)
  string(APPEND PARRAY_PC_CFLAGS " -I${CUDAToolkit_INCLUDE_DIRS}")
endif()
configure_file(cmake/parray.pc.in ${CMAKE_CURRENT_BINARY_DIR}/parray.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/parray.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
