# Backend detection. Each backend is an option: AUTO (default) turns it on when its library is
# found and prints why not otherwise; ON makes a missing library an error; OFF skips it.
set(C10D_WITH_GLOO AUTO CACHE STRING "Build the Gloo backend (AUTO|ON|OFF)")
set_property(CACHE C10D_WITH_GLOO PROPERTY STRINGS AUTO ON OFF)

set(C10D_HAVE_GLOO 0)
if(NOT C10D_WITH_GLOO STREQUAL "OFF")
  find_package(Gloo CONFIG QUIET)
  if(Gloo_FOUND OR TARGET gloo)
    set(C10D_HAVE_GLOO 1)
    message(STATUS "c10d: gloo backend: ON (Gloo ${Gloo_VERSION})")
  elseif(C10D_WITH_GLOO STREQUAL "ON")
    message(FATAL_ERROR "c10d: C10D_WITH_GLOO=ON but Gloo was not found: apt-get install libgloo-dev")
  else()
    message(STATUS "c10d: gloo backend: OFF (Gloo not found; apt-get install libgloo-dev)")
  endif()
else()
  message(STATUS "c10d: gloo backend: OFF (C10D_WITH_GLOO=OFF)")
endif()
