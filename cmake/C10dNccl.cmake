# Detection for the nccl backend: the CUDA toolkit (find_package(CUDAToolkit), with /usr/local/cuda
# as a hint) and NCCL's nccl.h / libnccl next to it (or under NCCL_HOME / C10D_NCCL_ROOT).
# C10D_WITH_NCCL: AUTO (default) builds the backend when both are found and says why not
# otherwise; ON makes a missing toolkit or NCCL an error; OFF skips it. The backend builds without
# a GPU; whether one is present is decided at run time (the registry's `available` check).
set(C10D_WITH_NCCL AUTO CACHE STRING "Build the NCCL backend (AUTO|ON|OFF)")
set_property(CACHE C10D_WITH_NCCL PROPERTY STRINGS AUTO ON OFF)
set(C10D_NCCL_ROOT "" CACHE PATH "Where NCCL is installed (default: next to the CUDA toolkit)")

set(C10D_HAVE_NCCL 0)
set(C10D_NCCL_WHY "")
if(C10D_WITH_NCCL STREQUAL "OFF")
  set(C10D_NCCL_WHY "C10D_WITH_NCCL=OFF")
else()
  if(NOT DEFINED CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT} AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND)
    set(C10D_NCCL_WHY "CUDA toolkit not found (set CUDAToolkit_ROOT)")
  else()
    # The toolkit's root (for the hints below and the installed c10dConfig.cmake).
    get_filename_component(C10D_CUDA_ROOT "${CUDAToolkit_BIN_DIR}" DIRECTORY)
    set(c10d_nccl_hints ${C10D_NCCL_ROOT} $ENV{NCCL_HOME} ${C10D_CUDA_ROOT}
        ${CUDAToolkit_TARGET_DIR})
    find_path(C10D_NCCL_INCLUDE_DIR nccl.h
              HINTS ${c10d_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
    find_library(C10D_NCCL_LIBRARY nccl
                 HINTS ${c10d_nccl_hints} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib64 lib)
    if(C10D_NCCL_INCLUDE_DIR AND C10D_NCCL_LIBRARY)
      file(STRINGS ${C10D_NCCL_INCLUDE_DIR}/nccl.h c10d_nccl_ver REGEX
           "^#define NCCL_(MAJOR|MINOR|PATCH) [0-9]+")
      string(REGEX REPLACE "[^0-9;]*NCCL_[A-Z]+ ([0-9]+)" "\\1" c10d_nccl_ver "${c10d_nccl_ver}")
      string(REPLACE ";" "." C10D_NCCL_VERSION "${c10d_nccl_ver}")
      if(C10D_NCCL_VERSION VERSION_LESS 2.19)
        set(C10D_NCCL_WHY "NCCL ${C10D_NCCL_VERSION} at ${C10D_NCCL_LIBRARY} is older than 2.19")
      else()
        set(C10D_HAVE_NCCL 1)
      endif()
    else()
      set(C10D_NCCL_WHY "nccl.h / libnccl not found next to CUDA ${CUDAToolkit_VERSION} (set C10D_NCCL_ROOT)")
    endif()
  endif()
endif()

if(C10D_HAVE_NCCL)
  message(STATUS "c10d: nccl backend: ON (NCCL ${C10D_NCCL_VERSION} ${C10D_NCCL_LIBRARY}, CUDA ${CUDAToolkit_VERSION}; runs where a GPU is present)")
elseif(C10D_WITH_NCCL STREQUAL "ON")
  message(FATAL_ERROR "c10d: C10D_WITH_NCCL=ON but the nccl backend cannot be built: ${C10D_NCCL_WHY}")
else()
  message(STATUS "c10d: nccl backend: OFF (${C10D_NCCL_WHY})")
endif()
