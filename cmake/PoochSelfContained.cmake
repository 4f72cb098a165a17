# Note [Self-contained libpooch.so]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# libpooch.so is loaded into someone else's process, and it is carried to GPU machines that have
# the NVIDIA driver and a framework but none of Debian's libraries. So it needs nothing at run
# time but the C and C++ runtime (libc, libm, libstdc++, libgcc_s, the dynamic loader), and none
# of its own symbols but the hooks is visible to the process:
#   - Abseil is linked in statically. Debian's static archives cannot go into a shared object
#     (they are not position-independent: R_X86_64_TPOFF32 in libabsl_base.a), so
#     scripts/build-abseil.sh builds Debian's own source of the installed version with -fPIC
#     and hidden visibility into one archive. Being the same source with the same patches, it
#     matches the headers core/ is compiled against, so core's layers (built once, for the
#     tests and the CLI too, which keep linking Debian's shared Abseil) link against it as they
#     are.
#   - Its symbols keep Debian's names (absl::debian3::...), the very names a host process that
#     links Debian's Abseil carries, or any other build of it. They cannot meet: the objects are
#     hidden, and libpooch.so's version script makes every symbol but the hooks local. So the
#     host's calls never reach pooch's copy (libpooch.so, preloaded, comes before the host's
#     libraries in the search order), and pooch's calls, bound inside libpooch.so when it is
#     linked, never reach the host's (tests/interpose/clash/clash.cmake shows both).
#   - libstdc++ stays a shared library: a host that uses C++ has loaded it already, every machine
#     with a framework has it, and two copies of it in one process (its allocator, its
#     exception and locale state) are riskier than the symbol versions it needs.
#   - libunwind is not linked (Debian's libunwind.a is not position-independent either).
# The pooch CLI links the same archive: it is a program of its own and cannot clash with
# anything, but `pooch run` must start on the GPU machine that libpooch.so is carried to.
# interpose_exports and cli_selfcontained check the NEEDED entries and the exports.

# The archive, shared by the build trees of one checkout (the sanitized trees never link it).
set(POOCH_ABSEIL_PIC_DIR "${CMAKE_SOURCE_DIR}/build/abseil" CACHE PATH
    "Where scripts/build-abseil.sh builds the position-independent Abseil")
set(POOCH_ABSEIL_PIC_ARCHIVE ${POOCH_ABSEIL_PIC_DIR}/libabsl_pic.a)
set(launcher)
if(CMAKE_CXX_COMPILER_LAUNCHER)
  set(launcher "CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}")
endif()
add_custom_command(
  OUTPUT ${POOCH_ABSEIL_PIC_ARCHIVE}
  COMMAND ${CMAKE_COMMAND} -E env ${launcher}
          ${CMAKE_SOURCE_DIR}/scripts/build-abseil.sh ${POOCH_ABSEIL_PIC_DIR}
  DEPENDS ${CMAKE_SOURCE_DIR}/scripts/build-abseil.sh
  COMMENT "Abseil, position-independent and hidden (scripts/build-abseil.sh)")
add_custom_target(abseil_pic DEPENDS ${POOCH_ABSEIL_PIC_ARCHIVE})

# _pooch_static_closure(out_layers out_others item...): the layers that item... link, directly
# or through one another, and what else they link, less Abseil's targets.
function(_pooch_static_closure out_layers out_others)
  set(todo ${ARGN})
  set(layers)
  set(others)
  while(todo)
    list(POP_FRONT todo item)
    if(TARGET ${item})
      get_property(is_layer TARGET ${item} PROPERTY POOCH_LAYER_DIRS SET)
      if(is_layer)
        if(NOT item IN_LIST layers)
          list(APPEND layers ${item})
          get_property(deps TARGET ${item} PROPERTY LINK_LIBRARIES)
          list(APPEND todo ${deps})
        endif()
        continue()
      endif()
    endif()
    if(NOT item MATCHES "^absl::" AND NOT item IN_LIST others)
      list(APPEND others ${item})
    endif()
  endwhile()
  set(${out_layers} ${layers} PARENT_SCOPE)
  set(${out_others} ${others} PARENT_SCOPE)
endfunction()

# pooch_link_self_contained(TARGET t LAYERS layer... [WHOLE layer...]): links t with the layers
# (WHOLE ones with every object, --whole-archive), those they use, and the archive above in
# place of Debian's shared Abseil. Linking the layers' targets would bring Debian's absl::
# targets along; so t gets their archives as files, and one group: the order among core's
# archives and Abseil's then does not matter.
function(pooch_link_self_contained)
  cmake_parse_arguments(S "" "TARGET" "LAYERS;WHOLE" ${ARGN})
  _pooch_static_closure(layers others ${S_WHOLE} ${S_LAYERS})
  set(whole_files)
  foreach(layer ${S_WHOLE})
    list(APPEND whole_files $<TARGET_FILE:${layer}>)
  endforeach()
  set(files)
  foreach(layer ${layers})
    if(NOT layer IN_LIST S_WHOLE)
      list(APPEND files $<TARGET_FILE:${layer}>)
    endif()
  endforeach()
  if(whole_files)
    target_link_libraries(${S_TARGET} PRIVATE
                          -Wl,--whole-archive ${whole_files} -Wl,--no-whole-archive)
  endif()
  target_link_libraries(${S_TARGET} PRIVATE
    -Wl,--start-group ${files} ${POOCH_ABSEIL_PIC_ARCHIVE} -Wl,--end-group ${others})
  add_dependencies(${S_TARGET} abseil_pic ${layers})
  set_property(TARGET ${S_TARGET} APPEND PROPERTY LINK_DEPENDS ${POOCH_ABSEIL_PIC_ARCHIVE})
endfunction()
