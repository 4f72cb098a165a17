# Configuration and CUDA error semantics under libpooch.so (issue 13, points 3 to 5), driven by
# errors_test.sh; included from CMakeLists.txt here (uses its ${POOCH_SIMGPU_LIB_DIR}). Every
# probe also runs on simgpu alone, the reference for what the real API answers.
#   interpose_errors_min_swap  POOCH_MIN_SWAP_BYTES 0 and 1 (and `pooch run --min-swap-bytes 0`)
#                              keep the limit: buffers swap, no slab is made; when pooch cannot
#                              make its parts (a full device) it says so in one line and
#                              allocations fail with cudaErrorInitializationError
#   interpose_errors_clamp     POOCH_MEMORY_LIMIT above the device's free memory is lowered to
#                              it with one line, and the program swaps instead of running out
#   interpose_errors_codes     cudaMalloc/cudaMallocAsync(SIZE_MAX, 1 << 63, 1 TiB) and
#                              cuMemAlloc(SIZE_MAX) return out-of-memory; cudaGetLastError and
#                              cudaPeekAtLastError report pooch's errors as the runtime would
#   interpose_errors_sticky    after an illegal address every call returns it
#   interpose_errors_pointers  pointer queries on swapped-out, resident and small allocations
#                              answer with the allocation the program asked for
add_executable(interpose_errors_probe ${CMAKE_CURRENT_LIST_DIR}/errors_probe.cc)
target_include_directories(interpose_errors_probe PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(interpose_errors_probe PRIVATE CUDA::cuda_driver CUDA::cudart)
set_target_properties(interpose_errors_probe PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
add_dependencies(interpose_tests interpose_errors_probe)

set(errors_pooch "")
if(TARGET pooch)
  set(errors_pooch $<TARGET_FILE:pooch>)
endif()
foreach(errors_case min_swap clamp codes sticky pointers)
  add_test(NAME interpose_errors_${errors_case}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/errors_test.sh ${errors_case}
                   $<TARGET_FILE:pooch_preload> ${POOCH_SIMGPU_LIB_DIR}
                   $<TARGET_FILE:interpose_errors_probe> $<TARGET_FILE:interpose_fault_probe>
                   ${errors_pooch})
  set_tests_properties(interpose_errors_${errors_case} PROPERTIES
    LABELS "simgpu;e2e" TIMEOUT 120)
endforeach()
