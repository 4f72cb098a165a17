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

function(pooch_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;ENV" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
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
