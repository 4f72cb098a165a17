# Fault and trace tests of libpooch.so (issue 4), driven by faults_test.sh; included from
# CMakeLists.txt here (uses its ${POOCH_SIMGPU_LIB_DIR} and ${cnn_train_bin}).
#   interpose_fault_host_alloc   cuMemHostAlloc (the pinned buffer of a swap-out) fails mid-run:
#                                the op that needed the room gets cudaErrorMemoryAllocation; a
#                                fault pooch can route around (another victim) is invisible
#   interpose_fault_mem_create   cuMemCreate (and cuMemMap) fails at a cudaMalloc and at a swap-in:
#                                cudaErrorMemoryAllocation at that call
#   interpose_fault_over_limit   a cudaMalloc larger than POOCH_MEMORY_LIMIT:
#                                cudaErrorMemoryAllocation, nothing evicted for it
#   interpose_trace              `pooch run --trace` on a swapping program: valid Chrome trace
#                                JSON (check_trace.py) with the swaps on their own tracks, the
#                                memory counter under the limit, counts equal to the summary
# Each fault case: the probe exits by itself (no signal), every byte of every buffer (swapped
# out before the fault or not) reads back intact, the call is retried successfully, stderr holds
# only pooch's lines (at most one about the failure) and simgpu's SIMGPU_FAIL line, and the
# hazard checker (at error) reports nothing.
add_executable(interpose_fault_probe ${CMAKE_CURRENT_LIST_DIR}/fault_probe.cc)
target_include_directories(interpose_fault_probe PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(interpose_fault_probe PRIVATE CUDA::cudart)
set_target_properties(interpose_fault_probe PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
add_dependencies(interpose_tests interpose_fault_probe)

set(faults_driver ${CMAKE_CURRENT_LIST_DIR}/faults_test.sh)
foreach(fault_case host_alloc mem_create over_limit)
  add_test(NAME interpose_fault_${fault_case}
           COMMAND ${faults_driver} ${fault_case} $<TARGET_FILE:pooch_preload>
                   ${POOCH_SIMGPU_LIB_DIR} $<TARGET_FILE:interpose_fault_probe>)
  set_tests_properties(interpose_fault_${fault_case} PROPERTIES
    LABELS "simgpu;e2e" TIMEOUT 120 ENVIRONMENT "SIMGPU_HAZARDS=error")
endforeach()
if(TARGET pooch)
  add_test(NAME interpose_trace
           COMMAND ${faults_driver} trace $<TARGET_FILE:pooch_preload> ${POOCH_SIMGPU_LIB_DIR}
                   $<TARGET_FILE:interpose_fault_probe> $<TARGET_FILE:pooch> ${cnn_train_bin}
                   ${CMAKE_CURRENT_SOURCE_DIR}/check_trace.py)
  set_tests_properties(interpose_trace PROPERTIES
    LABELS "simgpu;e2e" TIMEOUT 300 ENVIRONMENT "SIMGPU_HAZARDS=error")
endif()
