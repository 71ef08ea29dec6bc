# parray_add_executable(NAME SOURCES...): an executable from Parray sources
# (docs/parray-language.md). Each .pa (C++) and .pa.cu (CUDA) source is
# translated by parrayc at build time into <build>/parrayc/NAME/, then
# compiled with the other sources (.cpp, .cu) and linked to parray; compiler
# errors name the .pa file and line. A .pa.cu needs the CUDA language enabled
# (project(... LANGUAGES CXX CUDA)).
#
# In parray's own build the parrayc and parray targets are used; from an
# installed package (find_package(parray)) parray::parrayc and parray::parray.
function(parray_add_executable name)
  if(TARGET parray::parrayc)
    set(translator parray::parrayc)
    set(library parray::parray)
  else()
    set(translator parrayc)
    set(library parray)
  endif()
  set(sources "")
  set(source_dirs "")
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/parrayc/${name})
  foreach(source IN LISTS ARGN)
    get_filename_component(path ${source} ABSOLUTE)
    get_filename_component(file ${source} NAME)
    if(file MATCHES "\\.pa\\.cu$")
      string(REGEX REPLACE "\\.pa\\.cu$" ".cu" generated ${file})
    elseif(file MATCHES "\\.pa$")
      string(REGEX REPLACE "\\.pa$" ".cpp" generated ${file})
    else()
      list(APPEND sources ${source})
      continue()
    endif()
    set(generated ${CMAKE_CURRENT_BINARY_DIR}/parrayc/${name}/${generated})
    add_custom_command(OUTPUT ${generated}
                       COMMAND ${translator} ${path} -o ${generated}
                       DEPENDS ${path} ${translator}
                       COMMENT "parrayc ${file}"
                       VERBATIM)
    list(APPEND sources ${generated})
    # The generated file's own #include "..." look where the .pa is.
    get_filename_component(dir ${path} DIRECTORY)
    list(APPEND source_dirs ${dir})
  endforeach()
  add_executable(${name} ${sources})
  list(REMOVE_DUPLICATES source_dirs)
  target_include_directories(${name} PRIVATE ${source_dirs})
  target_link_libraries(${name} PRIVATE ${library})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--extended-lambda --expt-relaxed-constexpr>)
endfunction()
