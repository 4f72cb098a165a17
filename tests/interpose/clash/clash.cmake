# interpose_clash: libpooch.so inside a program that brings its own Abseil (issue 15; Note
# [Self-contained libpooch.so] in cmake/PoochSelfContained.cmake). Driven by clash_test.sh;
# included from CMakeLists.txt here (uses its ${POOCH_SIMGPU_LIB_DIR}). clash_probe links
# Debian's shared Abseil, whose names (absl::debian3::...) are the very names of libpooch.so's
# private copy, and two stand-ins for "another Abseil" under those names that answer
# recognisably (clash_probe.cc says which). With libpooch.so preloaded on simgpu:
#   - the program's Abseil calls give its own Abseil's answers (none reaches pooch's copy);
#   - pooch never calls the program's Abseil (no "clash:" line);
#   - pooch works: the program's buffers are swapped out and in, and read back intact;
#   - libpooch.so does carry, as local symbols, every function the stand-ins define (else the
#     test would show nothing).
add_library(interpose_clash_other_absl SHARED ${CMAKE_CURRENT_LIST_DIR}/clash_other_absl.cc)
add_executable(interpose_clash_probe ${CMAKE_CURRENT_LIST_DIR}/clash_probe.cc
                                     ${CMAKE_CURRENT_LIST_DIR}/clash_host_absl.cc)
target_include_directories(interpose_clash_probe PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
# The stand-in first: it must come before Debian's libabsl_strings in the search order.
target_link_libraries(interpose_clash_probe PRIVATE
  interpose_clash_other_absl absl::strings absl::str_format absl::flat_hash_map absl::statusor
  absl::time CUDA::cudart ${CMAKE_DL_LIBS})
set_target_properties(interpose_clash_probe PROPERTIES
  ENABLE_EXPORTS ON  # clash_host_absl.cc's functions in the dynamic symbol table, like -rdynamic
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
add_dependencies(interpose_tests interpose_clash_probe)

add_test(NAME interpose_clash
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/clash_test.sh $<TARGET_FILE:pooch_preload>
                 ${POOCH_SIMGPU_LIB_DIR} $<TARGET_FILE:interpose_clash_probe>
                 $<TARGET_FILE:interpose_clash_other_absl>)
set_tests_properties(interpose_clash PROPERTIES LABELS "simgpu;e2e" TIMEOUT 120)
