// The Abseil functions clash_probe defines and exports itself (clash_host_absl.cc).
#ifndef POOCH_TESTS_INTERPOSE_CLASH_HOST_ABSL_H_
#define POOCH_TESTS_INTERPOSE_CLASH_HOST_ABSL_H_

// How many calls of them came from libpooch.so (each also printed a "clash:" line).
int ClashCallsFromPooch();

#endif  // POOCH_TESTS_INTERPOSE_CLASH_HOST_ABSL_H_
