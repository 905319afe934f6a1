# Debian packages: `cpack -G DEB` in a build dir configured with -DCMAKE_INSTALL_PREFIX=/usr (so
# the library lands in Debian's multiarch libdir) builds one package per install component
# (cmake/C10dInstall.cmake):
#   libc10d<ABI>       lib    libc10d.so.<ABI> and the store libraries loaded next to it
#   libc10d-dev        dev    headers, the .so links, the CMake package, c10d.pc
#   c10d-tools         tools  c10drun, c10d_trace, the perf binaries (<libexecdir>/c10d/)
#   python3-c10d-torch torch  the c10d_torch module (only when the plugin is built)
# Depends come from the binaries (dpkg-shlibdeps), plus what it cannot see: the packages of this
# build on each other (same version) and the plugin on python3 and torch, which it dlopens or is
# loaded by. scripts/package-test.sh builds and installs them on Debian 12 and 13.
# The revision names the Debian release built for (1~deb12, 1~deb13): the two builds differ (their
# Depends name each release's sonames), and one made for 12 sorts below one made for 13.
set(C10D_DEB_RELEASE "" CACHE STRING
    "Debian revision of the packages (VERSION-REVISION); empty: 1~deb<N> on Debian N, else 1")
set(c10d_deb_release "${C10D_DEB_RELEASE}")
if(c10d_deb_release STREQUAL "")
  set(c10d_deb_release 1)
  if(EXISTS /etc/os-release)
    file(STRINGS /etc/os-release c10d_os_lines REGEX "^(ID|VERSION_ID)=")
    if(c10d_os_lines MATCHES "ID=debian" AND c10d_os_lines MATCHES "VERSION_ID=\"?([0-9]+)")
      set(c10d_deb_release "1~deb${CMAKE_MATCH_1}")
    endif()
  endif()
endif()
set(C10D_DEB_CONTACT "c10d maintainers <c10d@example.org>" CACHE STRING
    "Maintainer field of the Debian packages")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME c10d)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${C10D_DEB_CONTACT}")
# Empty: each package's description (below) has its own summary line; CPack would put the
# project's description above it.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${c10d_deb_release})
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libc10d, which dpkg-shlibdeps meets in the binaries of the other packages: found here, its package
# is named by the explicit Depends below (it is not installed yet, so shlibdeps cannot know it).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_LIBRARY_OUTPUT_DIRECTORY})
set(c10d_deb_version "${PROJECT_VERSION}-${c10d_deb_release}")
set(c10d_lib_package libc10d${C10D_ABI_VERSION})

set(CPACK_COMPONENTS_ALL lib dev tools)
set(CPACK_DEBIAN_LIB_PACKAGE_NAME ${c10d_lib_package})
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
# A shlibs file (libc10d <ABI> libc10d<ABI> (>= VERSION)), so packages built against this one get
# their Depends from dpkg-shlibdeps too; CPack adds the ldconfig trigger with it.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_COMPONENT_LIB_DESCRIPTION "collective-communication runtime (shared library)
c10d is a C++17 collective-communication runtime shaped like PyTorch's
torch.distributed core, without PyTorch: process groups with asynchronous
work handles and every collective, on the gloo and verbs backends, and
key-value stores for rendezvous (TCP, file; etcd and Redis through the
store libraries shipped here).

This package holds the shared libraries.
")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libc10d-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${c10d_lib_package} (= ${c10d_deb_version})")
# <c10d/c10d.h> needs none of them; the headers of single backends and stores include theirs.
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS
    "libgloo-dev, libibverbs-dev, libhiredis-dev, nlohmann-json3-dev")
set(CPACK_COMPONENT_DEV_DESCRIPTION "collective-communication runtime (development files)
c10d is a C++17 collective-communication runtime shaped like PyTorch's
torch.distributed core, without PyTorch.

This package holds the C++ and C headers, the CMake package
(find_package(c10d CONFIG) gives c10d::c10d) and the pkg-config file
(pkg-config c10d).
")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME c10d-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "${c10d_lib_package} (= ${c10d_deb_version})")
set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS "python3")
set(CPACK_DEBIAN_TOOLS_PACKAGE_SUGGESTS "python3-matplotlib")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "collective-communication runtime (launcher and tools)
c10d is a C++17 collective-communication runtime shaped like PyTorch's
torch.distributed core, without PyTorch.

This package holds c10drun, a torchrun-like launcher (static and elastic
rendezvous, Slurm and Open MPI environments), c10d_trace, which reads
flight-recorder dumps and names where ranks diverged, and the
nccl-tests-compatible perf binaries with perf_compare and perf_plot in
/usr/libexec/c10d.
")

if(C10D_TORCH_PLUGIN_BUILT)
  list(APPEND CPACK_COMPONENTS_ALL torch)
  # The module fits one python3 minor version (its EXT_SUFFIX) and one torch minor version (it
  # compiles against torch's C++ headers); dpkg-shlibdeps adds libtorch's own package.
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" torch_mm "${C10D_TORCH_VERSION}")
  string(REGEX MATCH "^[0-9]+" torch_major "${torch_mm}")
  string(REGEX MATCH "[0-9]+$" torch_minor "${torch_mm}")
  math(EXPR torch_next "${torch_minor} + 1")
  string(REGEX MATCH "[0-9]+$" py_minor "${C10D_TORCH_PYTHON_VERSION}")
  math(EXPR py_next "${py_minor} + 1")
  set(CPACK_DEBIAN_TORCH_PACKAGE_NAME python3-c10d-torch)
  set(CPACK_DEBIAN_TORCH_PACKAGE_SECTION python)
  set(CPACK_DEBIAN_TORCH_PACKAGE_DEPENDS
      "${c10d_lib_package} (= ${c10d_deb_version}), python3 (>= ${C10D_TORCH_PYTHON_VERSION}), python3 (<< 3.${py_next}), python3-torch (>= ${torch_mm}), python3-torch (<< ${torch_major}.${torch_next})")
  set(CPACK_COMPONENT_TORCH_DESCRIPTION "collective-communication runtime (PyTorch backend)
c10d is a C++17 collective-communication runtime shaped like PyTorch's
torch.distributed core, without PyTorch.

This package holds the Python module c10d_torch: importing it registers
the torch.distributed backend c10d (init_process_group with backend c10d).
")
endif()

# What Debian requires of every package beside the files: /usr/share/doc/<package>/copyright and,
# for a VERSION-REVISION package, changelog.Debian.gz. Only in component installs (CPack's), not
# in a plain `cmake --install`.
set(c10d_deb_doc ${CMAKE_BINARY_DIR}/debian)
file(READ ${CMAKE_SOURCE_DIR}/LICENSE c10d_license)
file(WRITE ${c10d_deb_doc}/copyright "c10d, a standalone C++ collective-communication runtime.\n\n"
     "${c10d_license}")
string(TIMESTAMP c10d_deb_date "%a, %d %b %Y %H:%M:%S +0000" UTC)  # honours SOURCE_DATE_EPOCH
file(WRITE ${c10d_deb_doc}/changelog.Debian
     "c10d (${c10d_deb_version}) unstable; urgency=medium\n\n"
     "  * Built with CPack from the c10d tree (cmake/C10dPackaging.cmake); the\n"
     "    changes of each version are in the commit history.\n\n"
     " -- ${C10D_DEB_CONTACT}  ${c10d_deb_date}\n")
file(ARCHIVE_CREATE OUTPUT ${c10d_deb_doc}/changelog.Debian.gz PATHS ${c10d_deb_doc}/changelog.Debian
     FORMAT raw COMPRESSION GZip COMPRESSION_LEVEL 9)
foreach(component IN LISTS CPACK_COMPONENTS_ALL)
  string(TOUPPER ${component} c)
  install(FILES ${c10d_deb_doc}/copyright ${c10d_deb_doc}/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${CPACK_DEBIAN_${c}_PACKAGE_NAME}
          COMPONENT ${component} EXCLUDE_FROM_ALL)
endforeach()
# ldconfig by trigger, as Debian's own library packages do (CPack adds a postinst calling it too).
file(WRITE ${c10d_deb_doc}/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA ${c10d_deb_doc}/triggers)

include(CPack)
