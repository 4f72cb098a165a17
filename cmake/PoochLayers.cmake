# Note [Include views]
# ~~~~~~~~~~~~~~~~~~~~
# Each folder of core/ and interpose/ is a layer: one library that names the layers it may use
# (docs/architecture.md draws them). The build enforces the arrows with the compiler rather than
# with a convention: a target never sees the source root on its include path, only a *view*, a
# folder in the build tree holding symbolic links to its own layer's folder and to those of the
# layers it uses, directly or through them. `#include "core/plan/plan.h"` from core/sim/ then
# fails with "No such file or directory", because core/plan is not in core/sim's view.
# Includes are always written from the source root ("core/sim/sim.h"), never relative
# ("../plan/plan.h"); tests/layers/check_layers.sh checks both rules.
#
#   pooch_layer(NAME core_sim DIR core/sim USES core_model core_base LIBS absl::status
#               [TEST_USES core_plan] [TEST_LIBS ...] [TEST_PREFIX core_]
#               [FUZZ_SEEDS core/model/testdata] [CUDA])
#
# builds DIR/*.cc (but *_test.cc, *_fuzz.cc, *_bench.cc) into the static library NAME, links it
# with USES and LIBS, gives it the view of DIR and of USES' views, and makes one GoogleTest binary
# per DIR/*_test.cc (TEST_PREFIX + its stem; label unit, and tsan for *_tsan_test.cc), one
# libFuzzer target per DIR/*_fuzz.cc, whose views add TEST_USES and whose seeds are the JSON files
# of FUZZ_SEEDS (DIR/testdata unless named), and one benchmark program per
# DIR/*_bench.cc (TEST_PREFIX + its stem, in bin/; not a test: it prints figures). CUDA adds the
# toolkit's headers (interpose/ only: core/ has no CUDA header, DESIGN.md).

# pooch_include_view(TARGET t NAME view DIRS dir... [SCOPE PRIVATE|PUBLIC]): the view `view`
# (links to the source folders DIRS) on t's include path.
function(pooch_include_view)
  cmake_parse_arguments(V "" "TARGET;NAME;SCOPE" "DIRS" ${ARGN})
  if(NOT V_SCOPE)
    set(V_SCOPE PRIVATE)
  endif()
  set(view ${CMAKE_BINARY_DIR}/include_views/${V_NAME})
  file(REMOVE_RECURSE ${view})
  list(REMOVE_DUPLICATES V_DIRS)
  # A layer nested in another's folder (core/residency/parts in core/residency) is already in the
  # view through its ancestor's link; linking it again would write through that link into the
  # source tree.
  set(nested)
  foreach(dir ${V_DIRS})
    foreach(other ${V_DIRS})
      string(FIND "${dir}" "${other}/" at)
      if(at EQUAL 0)
        list(APPEND nested ${dir})
      endif()
    endforeach()
  endforeach()
  if(nested)
    list(REMOVE_ITEM V_DIRS ${nested})
  endif()
  foreach(dir ${V_DIRS})
    get_filename_component(parent ${view}/${dir} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/${dir} ${view}/${dir} SYMBOLIC)
  endforeach()
  target_include_directories(${V_TARGET} ${V_SCOPE} ${view})
endfunction()

# The folders a layer sees: its own and, transitively, those of the layers it uses.
function(pooch_layer_dirs out)
  set(dirs)
  foreach(layer ${ARGN})
    get_property(layer_dirs TARGET ${layer} PROPERTY POOCH_LAYER_DIRS)
    if(NOT layer_dirs)
      message(FATAL_ERROR "${layer} is not a layer (declare it before the layers that use it)")
    endif()
    list(APPEND dirs ${layer_dirs})
  endforeach()
  list(REMOVE_DUPLICATES dirs)
  set(${out} ${dirs} PARENT_SCOPE)
endfunction()

function(pooch_layer)
  cmake_parse_arguments(L "CUDA" "NAME;DIR;TEST_PREFIX;FUZZ_SEEDS"
                        "USES;LIBS;TEST_USES;TEST_LIBS" ${ARGN})
  set(src ${CMAKE_SOURCE_DIR}/${L_DIR})
  file(GLOB sources CONFIGURE_DEPENDS ${src}/*.cc)
  list(FILTER sources EXCLUDE REGEX "(_test|_fuzz|_bench)\\.cc$")
  add_library(${L_NAME} STATIC ${sources})
  target_link_libraries(${L_NAME} PUBLIC ${L_USES} ${L_LIBS})
  pooch_layer_dirs(used ${L_USES})
  set(dirs ${L_DIR} ${used})
  set_property(TARGET ${L_NAME} PROPERTY POOCH_LAYER_DIRS ${dirs})
  pooch_include_view(TARGET ${L_NAME} NAME ${L_NAME} DIRS ${dirs})
  if(L_CUDA)
    target_include_directories(${L_NAME} PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  endif()

  # Its tests are made once the folder's CMakeLists.txt is read: TEST_USES may name a layer
  # declared after this one.
  set_property(TARGET ${L_NAME} PROPERTY POOCH_LAYER_TEST_ARGS "${ARGN}")
  # (A deferred call reads its arguments when it runs: the name is written into it now.)
  cmake_language(EVAL CODE "cmake_language(DEFER CALL pooch_layer_tests [[${L_NAME}]])")
endfunction()

# The tests and fuzzers of a layer (see pooch_layer).
function(pooch_layer_tests layer)
  get_property(args TARGET ${layer} PROPERTY POOCH_LAYER_TEST_ARGS)
  cmake_parse_arguments(L "CUDA" "NAME;DIR;TEST_PREFIX;FUZZ_SEEDS"
                        "USES;LIBS;TEST_USES;TEST_LIBS" ${args})
  set(src ${CMAKE_SOURCE_DIR}/${L_DIR})
  get_property(dirs TARGET ${L_NAME} PROPERTY POOCH_LAYER_DIRS)
  # Tests see what the layer sees and what TEST_USES adds (a test may drive its layer from above).
  pooch_layer_dirs(test_used ${L_TEST_USES})
  set(test_dirs ${dirs} ${test_used})
  file(GLOB tests CONFIGURE_DEPENDS ${src}/*_test.cc)
  foreach(test ${tests})
    get_filename_component(stem ${test} NAME_WE)
    set(labels unit)
    if(stem MATCHES "_tsan_test$")
      set(labels "unit;tsan")
    endif()
    set(name ${L_TEST_PREFIX}${stem})
    pooch_add_test(NAME ${name} SOURCES ${test}
                   LIBS ${L_NAME} ${L_TEST_USES} ${L_TEST_LIBS} GTest::gmock LABELS ${labels})
    pooch_include_view(TARGET ${name} NAME ${name} DIRS ${test_dirs})
    if(L_CUDA)
      target_include_directories(${name} PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
    endif()
  endforeach()

  file(GLOB benches CONFIGURE_DEPENDS ${src}/*_bench.cc)
  foreach(bench ${benches})
    get_filename_component(stem ${bench} NAME_WE)
    set(name ${L_TEST_PREFIX}${stem})
    add_executable(${name} ${bench})
    target_link_libraries(${name} PRIVATE ${L_NAME})
    pooch_include_view(TARGET ${name} NAME ${name} DIRS ${dirs})
  endforeach()

  file(GLOB fuzzers CONFIGURE_DEPENDS ${src}/*_fuzz.cc)
  set(seed_dir ${src}/testdata)
  if(L_FUZZ_SEEDS)
    set(seed_dir ${CMAKE_SOURCE_DIR}/${L_FUZZ_SEEDS})
  endif()
  foreach(fuzzer ${fuzzers})
    get_filename_component(stem ${fuzzer} NAME_WE)
    set(name ${L_TEST_PREFIX}${stem})
    # libFuzzer adds what it finds to its corpus folder, so it gets a copy of the seeds in the
    # build tree rather than the layer's testdata itself.
    set(corpus ${CMAKE_CURRENT_BINARY_DIR}/corpus_${stem})
    file(GLOB seeds ${seed_dir}/*.json)
    file(COPY ${seeds} DESTINATION ${corpus})
    pooch_add_fuzzer(NAME ${name} SOURCES ${fuzzer} LIBS ${L_NAME} ${L_TEST_USES} CORPUS ${corpus})
    if(TARGET ${name})
      pooch_include_view(TARGET ${name} NAME ${name} DIRS ${test_dirs})
    endif()
  endforeach()
endfunction()
