# One step of the consumer tests (tests/consumer/CMakeLists.txt):
#   cmake -DSTEP=install|find_package|pkg_config|add_subdirectory|python -D... -P run.cmake
# Fails with the command and its output if anything goes wrong.

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE output
                  ERROR_VARIABLE output)
  if(NOT status EQUAL 0)
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "${command}\nfailed (${status}):\n${output}")
  endif()
  set(output "${output}" PARENT_SCOPE)
endfunction()

function(expect_file path)
  if(NOT EXISTS ${PREFIX}/${path})
    message(FATAL_ERROR "not installed: ${PREFIX}/${path}")
  endif()
endfunction()

function(expect_symlink link target)
  file(READ_SYMLINK ${PREFIX}/${link} points_to)
  if(NOT points_to STREQUAL target)
    message(FATAL_ERROR "${link} points to '${points_to}', not ${target}")
  endif()
endfunction()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE ${PREFIX})
  run(${CMAKE_COMMAND} --install ${FPSTORE_BUILD_DIR} --prefix ${PREFIX})
  foreach(header store.h options.h status.h c.h version.h)
    expect_file(include/fpstore/${header})
  endforeach()
  set(package ${LIBDIR}/cmake/fpstore)
  foreach(file ${package}/fpstoreConfig.cmake ${package}/fpstoreConfigVersion.cmake
               ${package}/fpstoreTargets.cmake ${LIBDIR}/pkgconfig/fpstore.pc)
    expect_file(${file})
  endforeach()
  if(SHARED)
    # The SONAME carries the major version only.
    string(REGEX MATCH "^[0-9]+" major ${EXPECTED_VERSION})
    expect_symlink(${LIBDIR}/libfpstore.so libfpstore.so.${major})
    expect_symlink(${LIBDIR}/libfpstore.so.${major} libfpstore.so.${EXPECTED_VERSION})
    expect_file(${LIBDIR}/libfpstore.so.${EXPECTED_VERSION})
  endif()
  # fpstore's warnings and sanitizers are its own business.
  file(GLOB exports ${PREFIX}/${package}/fpstoreTargets*.cmake)
  foreach(export ${exports})
    file(READ ${export} text)
    foreach(leak fpstore_flags -Werror -fsanitize)
      string(FIND "${text}" "${leak}" at)
      if(NOT at EQUAL -1)
        message(FATAL_ERROR "${export} mentions ${leak}")
      endif()
    endforeach()
  endforeach()
  # The installed tools run and find the installed library.
  if(TOOLS)
    foreach(tool fpstore-load fpstore-query fpstore-admin)
      run(${PREFIX}/bin/${tool} --version)
      string(FIND "${output}" "${EXPECTED_VERSION}" at)
      if(at EQUAL -1)
        message(FATAL_ERROR "${tool} --version says: ${output}")
      endif()
    endforeach()
  endif()
  return()
endif()

if(STEP STREQUAL "python")
  # The Python package installed beside the library: it imports from the
  # prefix and loads the prefix's libfpstore.
  foreach(file __init__.py errors.py _fpstore.pyi py.typed)
    expect_file(${PYTHON_DIR}/fpstore/${file})
  endforeach()
  set(ENV{PYTHONPATH} ${PREFIX}/${PYTHON_DIR})
  set(ENV{PYTHONDONTWRITEBYTECODE} 1)
  if(PYTHON_PRELOAD)
    set(ENV{LD_PRELOAD} ${PYTHON_PRELOAD})
    set(ENV{ASAN_OPTIONS} detect_leaks=0)
  endif()
  run(${PYTHON} ${FPSTORE_SOURCE_DIR}/tests/consumer/python/check_install.py ${PREFIX})
  return()
endif()

set(build ${WORK_DIR}/${STEP})
file(REMOVE_RECURSE ${build})
set(configure ${CMAKE_COMMAND} -S ${FPSTORE_SOURCE_DIR}/tests/consumer/${STEP} -B ${build}
    -G ${GENERATOR} -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE})
if(STEP STREQUAL "find_package")
  list(APPEND configure -DCMAKE_PREFIX_PATH=${PREFIX} -DFPSTORE_PREFIX=${PREFIX})
elseif(STEP STREQUAL "pkg_config")
  set(ENV{PKG_CONFIG_PATH} ${PREFIX}/${LIBDIR}/pkgconfig)
  run(pkg-config --modversion fpstore)
  if(NOT output STREQUAL "${EXPECTED_VERSION}\n")
    message(FATAL_ERROR "pkg-config --modversion fpstore says: ${output}")
  endif()
elseif(STEP STREQUAL "add_subdirectory")
  list(APPEND configure -DFPSTORE_SOURCE_DIR=${FPSTORE_SOURCE_DIR}
       -DEXPECTED_VERSION=${EXPECTED_VERSION})
else()
  message(FATAL_ERROR "unknown STEP '${STEP}'")
endif()
# The installed library is built with the sanitizers if they are on; so
# must its consumers be. The add_subdirectory consumer builds its own.
if(SANITIZER_FLAGS AND NOT STEP STREQUAL "add_subdirectory")
  list(APPEND configure "-DCMAKE_CXX_FLAGS=${SANITIZER_FLAGS}"
       "-DCMAKE_EXE_LINKER_FLAGS=${SANITIZER_FLAGS}")
endif()

run(${configure})
run(${CMAKE_COMMAND} --build ${build})
run(${build}/consumer ${build}/store)
message(STATUS "${output}")
