# The rooms of libc10d (cmake/layering.txt): each folder is an OBJECT library whose include path
# is a view (build/rooms/<room>/, symbolic links) holding only the folders it stands on, so an
# include from a floor above does not compile. libc10d.so is the objects of every room, linked
# once; users still link one library.

file(STRINGS ${CMAKE_SOURCE_DIR}/cmake/layering.txt c10d_layering_lines REGEX "^[a-z_]+[ \t]")
foreach(line IN LISTS c10d_layering_lines)
  string(REGEX REPLACE "[ \t]+" ";" fields "${line}")
  list(POP_FRONT fields room folder)
  if(fields STREQUAL "-")
    set(fields "")
  endif()
  set_property(GLOBAL PROPERTY C10D_ROOM_FOLDER_${room} ${folder})
  set_property(GLOBAL PROPERTY C10D_ROOM_BELOW_${room} ${fields})
endforeach()

# c10d_room_view_add(VIEW FOLDER): links FOLDER of the source tree into VIEW at the same path. The
# capi room's folder, c10d/, holds the other rooms' folders too: of it only its own files (c10d.h,
# c_api.h, ...) are linked.
function(c10d_room_view_add view f)
  set(src ${CMAKE_SOURCE_DIR}/${f})
  if(f STREQUAL "c10d")
    file(MAKE_DIRECTORY ${view}/c10d)
    file(GLOB own LIST_DIRECTORIES false RELATIVE ${src} ${src}/*.h)
    foreach(h IN LISTS own)
      file(CREATE_LINK ${src}/${h} ${view}/c10d/${h} SYMBOLIC)
    endforeach()
  else()
    get_filename_component(parent ${view}/${f} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${src} ${view}/${f} SYMBOLIC)
  endif()
endfunction()

# c10d_room(ROOM SOURCES...): the OBJECT library c10d_room_<ROOM> from sources of the room's
# folder, compiled into libc10d.
function(c10d_room room)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  get_property(folder GLOBAL PROPERTY C10D_ROOM_FOLDER_${room})
  get_property(below GLOBAL PROPERTY C10D_ROOM_BELOW_${room})
  if(NOT folder OR "*" IN_LIST below)
    message(FATAL_ERROR "c10d_room(${room}): not a room of libc10d in cmake/layering.txt")
  endif()
  set(target c10d_room_${room})
  add_library(${target} OBJECT ${ARG_SOURCES})
  set(view ${CMAKE_BINARY_DIR}/rooms/${room})
  file(REMOVE_RECURSE ${view})
  foreach(r IN LISTS room below)
    get_property(f GLOBAL PROPERTY C10D_ROOM_FOLDER_${r})
    if(NOT f)
      message(FATAL_ERROR "cmake/layering.txt: room ${room} stands on '${r}', which is no room")
    endif()
    c10d_room_view_add(${view} ${f})
  endforeach()
  # generated/: c10d/base/config.h, what this build contains.
  target_include_directories(${target} PRIVATE ${view} ${CMAKE_BINARY_DIR}/generated)
  # cmake/C10dExports.cmake says why.
  target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-fno-gnu-unique>)
  c10d_set_warnings(${target})
  target_sources(c10d PRIVATE $<TARGET_OBJECTS:${target}>)
  set_property(GLOBAL APPEND PROPERTY C10D_ROOMS ${target})
endfunction()

# c10d_room_link(ROOM LIBS...): libraries a room compiles against, which libc10d links.
function(c10d_room_link room)
  target_link_libraries(c10d_room_${room} PRIVATE ${ARGN})
  target_link_libraries(c10d PRIVATE ${ARGN})
endfunction()

# c10d_room_probe(TARGET ROOM SOURCE): an object library outside `all`, compiled against ROOM's
# view as the room's own files are; tests/layering builds probes to show that an include from a
# floor above does not compile.
function(c10d_room_probe target room source)
  add_library(${target} OBJECT EXCLUDE_FROM_ALL ${source})
  target_include_directories(${target} PRIVATE ${CMAKE_BINARY_DIR}/rooms/${room}
                                               ${CMAKE_BINARY_DIR}/generated)
endfunction()
