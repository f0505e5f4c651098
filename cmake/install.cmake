# Install rules: headers, the library, a CMake package and a pkg-config file.
# Included from the top-level CMakeLists.txt when FPSTORE_INSTALL is on.

include(CMakePackageConfigHelpers)

set(FPSTORE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fpstore)

install(DIRECTORY include/fpstore ${PROJECT_BINARY_DIR}/include/fpstore
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(TARGETS fpstore EXPORT fpstoreTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT fpstoreTargets NAMESPACE fpstore:: DESTINATION ${FPSTORE_CMAKE_DIR})

get_target_property(FPSTORE_LIBRARY_TYPE fpstore TYPE)
# find_package(fpstore 1.x) accepts any 1.y >= x: the major version is the
# one in the SONAME.
configure_package_config_file(cmake/fpstoreConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fpstoreConfig.cmake INSTALL_DESTINATION ${FPSTORE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fpstoreConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fpstoreConfig.cmake
              ${PROJECT_BINARY_DIR}/fpstoreConfigVersion.cmake
        DESTINATION ${FPSTORE_CMAKE_DIR})

# fpstore.pc finds the prefix from its own place (${pcfiledir}), so an
# install moved or made with `cmake --install --prefix` still works.
file(RELATIVE_PATH FPSTORE_PC_PREFIX
     ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" FPSTORE_PC_PREFIX "${FPSTORE_PC_PREFIX}")
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(FPSTORE_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(FPSTORE_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
configure_file(cmake/fpstore.pc.in ${PROJECT_BINARY_DIR}/fpstore.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fpstore.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The installed tools find the installed library beside them.
file(RELATIVE_PATH FPSTORE_BIN_TO_LIB
     ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
set(FPSTORE_TOOLS_INSTALL_RPATH "$ORIGIN/${FPSTORE_BIN_TO_LIB}")
