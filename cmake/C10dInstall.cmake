# Installation: headers under <prefix>/include/c10d/<room>/ (cmake/layering.txt), the library, the tools,
# a CMake package (find_package(c10d CONFIG) -> c10d::c10d) and a pkg-config file (c10d.pc).
# Every rule names its install component, one per Debian package (cmake/C10dPackaging.cmake):
# lib (the shared libraries), dev (headers, the unversioned .so links, the CMake package, c10d.pc),
# tools (tools/CMakeLists.txt, perf/CMakeLists.txt), torch (integrations/torch).
include(CMakePackageConfigHelpers)

install(TARGETS c10d EXPORT c10dTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT lib)

# Consumers put <prefix>/include on their include path and write #include <c10d/...>.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/c10d/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/c10d
        COMPONENT dev FILES_MATCHING PATTERN "*.h" PATTERN "*_internal.h" EXCLUDE)
install(FILES ${CMAKE_BINARY_DIR}/generated/c10d/base/config.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/c10d/base COMPONENT dev)

set(C10D_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/c10d)
install(EXPORT c10dTargets NAMESPACE c10d:: DESTINATION ${C10D_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/c10dConfig.cmake.in
  ${CMAKE_BINARY_DIR}/c10dConfig.cmake INSTALL_DESTINATION ${C10D_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/c10dConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/c10dConfig.cmake ${CMAKE_BINARY_DIR}/c10dConfigVersion.cmake
        DESTINATION ${C10D_CMAKE_DIR} COMPONENT dev)

# Relocatable: the .pc finds the prefix from its own location, so `cmake --install --prefix P`
# works for any P.
file(RELATIVE_PATH C10D_PC_TO_PREFIX "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/c10d.pc.in ${CMAKE_BINARY_DIR}/c10d.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/c10d.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)

# The store libraries (etcd://, redis://): not part of the CMake package; libc10d loads them by URL
# scheme from its own directory (c10d/store/store_registry.h), so they go next to it.
foreach(store_lib c10d_store_etcd c10d_store_redis)
  if(TARGET ${store_lib})
    install(TARGETS ${store_lib}
            LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev)
  endif()
endforeach()
