# What libc10d exports and how its own references bind.
#
# SONAME: libc10d.so.<C10D_ABI_VERSION>, the C ABI's version, read from c10d/c_api.h (the one
# place it is defined); the file is libc10d.so.<ABI>.<release> (e.g. libc10d.so.1.0.1.0 for ABI 1,
# release 0.1.0). The C++ API makes no ABI promise across releases: C++ users rebuild against the
# headers of the library they run with.
#
# Exports (cmake/c10d_exports.map): the C ABI (c10d_*) and the c10d:: C++ API, with the typeinfo
# and vtables of c10d classes (exceptions and dynamic_cast across the library boundary need
# them). Everything else is local: the std:: and Gloo template instantiations compiled into the
# library, anything in another namespace, and the verbs engine's internals (c10d::verbs:: but
# ProcessGroupVerbs). The tests of internals link c10d_internals (tests/CMakeLists.txt): the same
# object files, linked without the list.
#
# Binding: -Bsymbolic. The library's references to its own definitions are bound at link time,
# so another library in the process that defines the same names can never take them over,
# whatever the load order and RTLD_GLOBAL. (libtorch's c10d::Work, c10d::ProcessGroup, ... no
# longer share our mangled names, which say c10d::v1 (c10d/base/abi.h); tests/capi/interpose_test
# loads an impostor that does.) -Bsymbolic-functions would not do: vtables and typeinfo are data,
# and a Work built here with an impostor's vtable would call into the impostor. The price of
# -Bsymbolic is that an executable that copy-relocates an exported *mutable* variable would get
# its own copy, which the library does not see; so the library exports no mutable data (its
# exported objects are vtables, typeinfo and constant tables), and tests/capi/symbols_test checks
# it. -fno-gnu-unique (GCC): static data members and statics of inline functions become ordinary
# weak symbols, bound locally like the rest, instead of STB_GNU_UNIQUE ones, which the dynamic
# linker shares between every library that defines them (-Bsymbolic notwithstanding).
file(STRINGS ${CMAKE_SOURCE_DIR}/c10d/c_api.h c10d_abi_line REGEX "^#define C10D_ABI_VERSION [0-9]+$")
string(REGEX REPLACE "^#define C10D_ABI_VERSION ([0-9]+)$" "\\1" C10D_ABI_VERSION "${c10d_abi_line}")
if(NOT C10D_ABI_VERSION MATCHES "^[0-9]+$")
  message(FATAL_ERROR "c10d: no '#define C10D_ABI_VERSION <n>' line in c10d/c_api.h")
endif()
message(STATUS "c10d: C ABI version ${C10D_ABI_VERSION} (SONAME libc10d.so.${C10D_ABI_VERSION})")

set_target_properties(c10d PROPERTIES
  SOVERSION ${C10D_ABI_VERSION}
  VERSION ${C10D_ABI_VERSION}.${PROJECT_VERSION})

set(C10D_EXPORTS_MAP ${CMAKE_SOURCE_DIR}/cmake/c10d_exports.map)
target_link_options(c10d PRIVATE "LINKER:--version-script=${C10D_EXPORTS_MAP}" "LINKER:-Bsymbolic")
set_property(TARGET c10d APPEND PROPERTY LINK_DEPENDS ${C10D_EXPORTS_MAP})
target_compile_options(c10d PRIVATE $<$<CXX_COMPILER_ID:GNU>:-fno-gnu-unique>)

# c10d_store_library_exports(TARGET): a store library (etcd, redis) exports its c10d:: names only
# (cmake/c10d_store_exports.map) and binds its own references as libc10d does.
set(C10D_STORE_EXPORTS_MAP ${CMAKE_SOURCE_DIR}/cmake/c10d_store_exports.map)
function(c10d_store_library_exports target)
  target_link_options(${target} PRIVATE "LINKER:--version-script=${C10D_STORE_EXPORTS_MAP}"
                      "LINKER:-Bsymbolic")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${C10D_STORE_EXPORTS_MAP})
  target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-fno-gnu-unique>)
endfunction()
