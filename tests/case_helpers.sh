# Helpers shared by the shell-driven end-to-end tests (tests/e2e/cnn_train_e2e.sh,
# tests/interpose/interpose_test.sh, tests/interpose/faults/faults_test.sh). Source it after
# setting case_name, work (a scratch folder) and libdir (the simgpu library folder).

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

# not_summary FILE: FILE's lines but the summary's, plain and detailed (Note [Summary in words] in
# interpose/process/summary_words.h), and those POOCH_LOG=info adds at start-up.
not_summary() {
  grep -v -e '^pooch: \(summary\|memory\|swaps\|reuse\|host\|small\|opaque\|calls\): ' \
    -e '^pooch: \(limit [0-9]\|moved \|plan of policy \|no plan: \|went wrong: \|nothing went wrong$\)' \
    -e '^pooch: policy [a-z-]*: no device memory managed' \
    -e '^pooch: \(loaded, policy \|managing device memory: \)' "$1"
}

# run NAME CMD...: stdout to NAME.out, stderr to NAME.err; sets $rc.
run() {
  name=$1
  shift
  "$@" >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
}

# runtime_only FILE: fails unless the ELF object FILE needs nothing at run time but the C and C++
# runtime (Note [Self-contained libpooch.so] in cmake/PoochSelfContained.cmake): its NEEDED
# entries are among them, and every symbol it leaves to the dynamic linker carries one of their
# version nodes, but the toolchain's weak hooks. An unversioned one would bind to whatever
# library of the process defines that name first (an Abseil function, say).
runtime_only() {
  readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' >"$work/needed.txt"
  [ -s "$work/needed.txt" ] || fail "readelf found no NEEDED entry in $1"
  if grep -vE '^(lib(c|m|stdc\+\+|gcc_s|dl|pthread|rt)\.so\.[0-9]+|ld-linux[-a-z0-9_]*\.so\.[0-9]+)$' \
      "$work/needed.txt" >"$work/extra_needed.txt"; then
    fail "$1 needs more than the C and C++ runtime: $(tr '\n' ' ' <"$work/extra_needed.txt")"
  fi
  nm -D --undefined-only "$1" | awk '{ print $NF }' |
    grep -vE '@(GLIBC|GLIBCXX|CXXABI|GCC)_[0-9.]+$|^(__gmon_start__|_ITM_(de)?registerTMCloneTable)$' \
      >"$work/unversioned.txt"
  if [ -s "$work/unversioned.txt" ]; then
    fail "$1 leaves symbols to whichever library defines them: $(head -5 "$work/unversioned.txt" | tr '\n' ' ')"
  fi
}
