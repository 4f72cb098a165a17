# pooch_add_test(NAME name SOURCES a_test.cc ... [LIBS lib ...] [LABELS unit|simgpu|e2e|tsan ...]
#                [ENV VAR=value ...] [TIMEOUT seconds])
#
# One GoogleTest binary is one ctest entry. Labels decide where a test also runs:
#   unit    core and simgpu unit tests; scripts/test.sh rebuilds these under ASan+UBSan
#   tsan    threaded tests; scripts/test.sh rebuilds these under ThreadSanitizer
#   simgpu  programs run on the CPU reference device (needs the simgpu libraries)
#   e2e     end-to-end runs of samples, under pooch or not
# The aggregate targets tests_unit and tests_tsan build just what a sanitized tree needs.
#
# POOCH_UNIT_TESTS=OFF leaves the unit tests out of the tree's default build and of its ctest
# (tests_unit still builds them). scripts/test.sh configures build/ so when it goes on to the
# ASan+UBSan tree, which builds and runs every unit test: building them a second time at -O2
# cost CI about four minutes of its thirty on two cores.
option(POOCH_UNIT_TESTS "Build the unit tests by default and register them with ctest" ON)
if(NOT TARGET tests_unit)
  add_custom_target(tests_unit)
  add_custom_target(tests_tsan)
endif()

# Note [Test precompiled header]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Every test binary compiles GoogleTest, gmock, the standard library and Abseil's common headers
# before its own lines; at -O0 under ASan that parse is a third of a test file's compile. So the
# tests share one precompiled header (pooch_test_pch, REUSE_FROM), built once per tree: every
# test of a tree has that tree's flags, and GCC refuses a header built with other flags
# (-Winvalid-pch, an error under -Werror), so a test given its own options fails to build rather
# than silently compiling without it. The header holds only third-party and standard headers:
# a layer's own headers stay behind its include view (Note [Include views]).
# ccache caches a file compiled with a precompiled header only with
# sloppiness=pch_defines,time_macros, and compiles it uncached otherwise; so a tree configured
# with a compiler launcher (ccache for local builds; CI has none) leaves the header off unless
# asked for with -DPOOCH_TEST_PCH=ON. Without it a test must also name every header it uses.
# The header is on by default only in the sanitized trees: they build the unit tests at -O0,
# where the parse dominates; at -O2 GCC 12 inlines differently through the header and reports
# false -Warray-bounds errors in std::string concatenations (simgpu_kernel_launch_test), and the
# main tree builds few tests.
if(CMAKE_CXX_COMPILER_LAUNCHER OR NOT POOCH_SANITIZE)
  set(pooch_test_pch_default OFF)
else()
  set(pooch_test_pch_default ON)
endif()
option(POOCH_TEST_PCH "Compile the tests with a shared precompiled header"
       ${pooch_test_pch_default})
if(POOCH_TEST_PCH AND NOT TARGET pooch_test_pch)
  # An executable, so that it is compiled with the tests' flags (-fPIE, not a library's -fPIC).
  add_executable(pooch_test_pch ${CMAKE_CURRENT_LIST_DIR}/pooch_test_pch.cc)
  target_link_libraries(pooch_test_pch PRIVATE GTest::gmock GTest::gtest GTest::gtest_main)
  target_precompile_headers(pooch_test_pch PRIVATE
    <algorithm> <cmath> <cstdint> <cstring> <fstream> <functional> <limits> <map> <memory>
    <optional> <random> <sstream> <string> <thread> <utility> <vector>
    <absl/container/flat_hash_map.h> <absl/container/flat_hash_set.h> <absl/status/status.h>
    <absl/status/statusor.h> <absl/strings/str_cat.h> <absl/strings/string_view.h>
    <absl/types/span.h> <gmock/gmock.h> <gtest/gtest.h>)
  set_target_properties(pooch_test_pch PROPERTIES EXCLUDE_FROM_ALL TRUE
                        RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
endif()

function(pooch_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;ENV" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  if(POOCH_TEST_PCH)
    target_precompile_headers(${T_NAME} REUSE_FROM pooch_test_pch)
  endif()
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  if("tsan" IN_LIST T_LABELS)
    add_dependencies(tests_tsan ${T_NAME})
  endif()
  if("unit" IN_LIST T_LABELS)
    add_dependencies(tests_unit ${T_NAME})
    if(NOT POOCH_UNIT_TESTS)
      set_target_properties(${T_NAME} PROPERTIES EXCLUDE_FROM_ALL TRUE)
      return()
    endif()
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} --gtest_brief=1)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
  if(T_ENV)
    set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT "${T_ENV}")
  endif()
endfunction()

# pooch_add_fuzzer(NAME name SOURCES ... LIBS ... [SECONDS n]): a libFuzzer target, built only
# with POOCH_FUZZ=ON (clang). Its ctest entry (label fuzz) runs it for POOCH_FUZZ_SECONDS.
if(NOT TARGET fuzzers)
  add_custom_target(fuzzers)
endif()
function(pooch_add_fuzzer)
  cmake_parse_arguments(F "" "NAME;CORPUS" "SOURCES;LIBS" ${ARGN})
  if(NOT POOCH_FUZZ)
    return()
  endif()
  add_executable(${F_NAME} ${F_SOURCES})
  target_compile_options(${F_NAME} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(${F_NAME} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${F_NAME} PRIVATE ${F_LIBS})
  set_target_properties(${F_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_dependencies(fuzzers ${F_NAME})
  set(seconds $ENV{POOCH_FUZZ_SECONDS})
  if(NOT seconds)
    set(seconds 20)
  endif()
  set(corpus_args)
  if(F_CORPUS)
    set(corpus_args ${F_CORPUS})
  endif()
  add_test(NAME ${F_NAME}
           COMMAND ${F_NAME} -max_total_time=${seconds} -max_len=65536 ${corpus_args})
  set_tests_properties(${F_NAME} PROPERTIES LABELS fuzz TIMEOUT 600)
endfunction()
