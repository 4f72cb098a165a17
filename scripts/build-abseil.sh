#!/usr/bin/env bash
# Builds the Abseil that libpooch.so and the pooch CLI link, position-independent and with hidden
# visibility, into one static archive, OUT/libabsl_pic.a (Note [Self-contained libpooch.so] in
# cmake/PoochSelfContained.cmake says why). The build runs it when the archive is missing;
# scripts/setup.sh runs it before the build so that the download happens there.
#
# Usage: scripts/build-abseil.sh [OUT]      (OUT defaults to build/abseil)
# Environment: POOCH_JOBS (default: number of cores); CMAKE_CXX_COMPILER_LAUNCHER (e.g. ccache)
# is honoured by CMake itself.
#
# The source is Debian's source package of the installed libabsl-dev, with Debian's patches, so
# that it is exactly the code behind the headers pooch compiles against (/usr/include/absl:
# inline namespace absl::debian3, absl::optional and friends as Abseil's own types): objects
# compiled against those headers link against this archive unchanged. apt fetches it from the
# deb-src twins of the configured mirrors (verified by apt against their signed Release files),
# using a private apt state in OUT/apt: the system's apt configuration is read, never changed,
# and no root is needed. Idempotent: the source is downloaded once; a second run is offline and,
# when the archive is current, does nothing but touch it (the build compares its time with this
# script's).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/build/abseil}")
jobs="${POOCH_JOBS:-$(nproc)}"

# The compiled libraries behind the absl:: targets core/CMakeLists.txt links (flat_hash_map,
# btree, span and str_format are headers over these); CMake builds what they depend on too. A
# missing one makes the link of libpooch.so fail (--no-undefined), never fall back.
targets=(status statusor strings str_format_internal hash raw_hash_set synchronization time
         throw_delegate)
# Debian builds Abseil as C++17 with -O2 (debian/rules); so do we, adding what a shared object
# needs (-fPIC) and what keeps its symbols out of the dynamic symbol table (hidden visibility).
# No -g: Abseil's frames keep their names, and the build stays short. -fno-extern-tls-init
# (GCC): every extern thread_local of Abseil is ABSL_CONST_INIT, so no initialisation function
# exists, yet GCC would leave a weak undefined reference to one per variable
# (_ZTHN4absl7debian313cord_internal17cordz_next_sampleE) in libpooch.so's dynamic symbol
# table, where a host's symbol of that name could bind to it.
cxxflags=-O2
if echo 'int i;' | "${CXX:-c++}" -fno-extern-tls-init -x c++ -c - -o /dev/null 2>/dev/null; then
  cxxflags="$cxxflags -fno-extern-tls-init"
fi
cmake_args=(-DCMAKE_BUILD_TYPE= "-DCMAKE_CXX_FLAGS=$cxxflags" -DCMAKE_CXX_STANDARD=17
            -DABSL_PROPAGATE_CXX_STD=ON -DCMAKE_POSITION_INDEPENDENT_CODE=ON
            -DCMAKE_CXX_VISIBILITY_PRESET=hidden -DCMAKE_VISIBILITY_INLINES_HIDDEN=ON
            -DBUILD_TESTING=OFF)

package=$(dpkg-query -W -f='${source:Package}' libabsl-dev 2>/dev/null) ||
  { echo "build-abseil: libabsl-dev is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
version=$(dpkg-query -W -f='${Version}' libabsl-dev)
archive="$out/libabsl_pic.a"
stamp="$package $version ${targets[*]} ${cmake_args[*]}"

mkdir -p "$out"
# Build trees of one checkout share OUT; two builds at once take turns.
exec 9>"$out/.lock"
flock 9
if [ -f "$archive" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
  touch "$archive"
  exit 0
fi

# fetch: Debian's source package, unpacked with its patches applied, into $out/source.
fetch() {
  local apt="$out/apt"
  rm -rf "$apt" "$out/source"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts" "$apt/download"
  # The configured mirrors, each as a source (deb-src) entry: one-line and deb822 formats.
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] && sed -n 's/^deb[[:space:]]/deb-src /p' "$f"
  done >"$apt/sources.list"
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && { sed 's/^Types:.*/Types: deb-src/' "$f"; echo; }
  done >"$apt/parts/mirrors.sources"
  local opts=(-qq -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts="$apt/parts"
              -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache"
              -o APT::Sandbox::User="$(id -un)")
  echo "build-abseil: downloading Debian's source of $package $version"
  apt-get "${opts[@]}" update
  (cd "$apt/download" && apt-get "${opts[@]}" source --download-only "$package=$version")
  # (gpgv's "no public key" is expected: apt has checked the files against the signed indices.)
  if ! dpkg-source -x "$apt/download/${package}_${version#*:}.dsc" "$out/source.tmp" \
      >"$apt/unpack.log" 2>&1; then
    cat "$apt/unpack.log" >&2
    exit 1
  fi
  rm -f "$out"/*.orig.tar.*  # the copy dpkg-source leaves beside the folder it unpacks into
  mv "$out/source.tmp" "$out/source"
  echo "$package $version" >"$out/source/.pooch-version"
  rm -rf "$apt/lists" "$apt/cache"  # 20 MB of package indices, needed only to download
}
[ "$(cat "$out/source/.pooch-version" 2>/dev/null)" = "$package $version" ] || fetch

echo "build-abseil: building ${targets[*]} into $archive (log: $out/build.log)"
start=$SECONDS
if ! { cmake -S "$out/source" -B "$out/build" "${cmake_args[@]}" &&
       cmake --build "$out/build" -j "$jobs" --target "${targets[@]}"; } >"$out/build.log" 2>&1; then
  tail -n 30 "$out/build.log" >&2
  echo "build-abseil: the build failed (log: $out/build.log)" >&2
  exit 1
fi
# One archive holds every library, so the link needs no order among Abseil's own libraries.
{
  echo "create $archive.tmp"
  find "$out/build" -name 'libabsl_*.a' | sort | sed 's/^/addlib /'
  echo save
  echo end
} | ar -M
ranlib "$archive.tmp"
mv "$archive.tmp" "$archive"
echo "$stamp" >"$out/stamp"
echo "build-abseil: done in $((SECONDS - start)) s"
