# Helpers shared by the shell-driven end-to-end tests (tests/e2e/cnn_train_e2e.sh,
# tests/interpose/interpose_test.sh, tests/interpose/faults_test.sh). Source it after setting
# case_name, work (a scratch folder) and libdir (the simgpu library folder).

# fail MESSAGE: prints the failure and the tail of every output the case kept, then exits 1.
fail() {
  echo "FAIL ($case_name): $*" >&2
  for f in "$work"/*.out "$work"/*.err; do
    [ -s "$f" ] || continue
    echo "--- $f" >&2
    tail -n 40 "$f" >&2
  done
  exit 1
}

# need_simgpu: fails unless simgpu's four libraries are in $libdir, and runs programs on them
# even when the test runner did not set LD_LIBRARY_PATH.
need_simgpu() {
  for lib in libcuda.so.1 libcudart.so.13 libcudnn.so.9 libcublas.so.13; do
    [ -e "$libdir/$lib" ] || fail "simgpu library $libdir/$lib is missing (build the simgpu targets)"
  done
  LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LD_LIBRARY_PATH
}

# run NAME CMD...: stdout to NAME.out, stderr to NAME.err; sets $rc.
run() {
  name=$1
  shift
  "$@" >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
}
