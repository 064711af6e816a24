#!/usr/bin/env bash
# Builds a sanitizer tree and runs its tests with CTest (tests/sanitizers/CMakeLists.txt).
#
#   sanitized_ctest.sh asan SOURCE_DIR TREE
#       TREE is the clang ASan + UBSan tree fuzz/build configured (fuzz/build_fuzzers.cmake):
#       builds everything in it and runs every test but kube/*, fuzz/*, soak/*, sim/cli and
#       cli/thread-limit.
#   sanitized_ctest.sh tsan SOURCE_DIR TREE CLANGXX GENERATOR TARGET[,TARGET...]
#       configures TREE (once) with CLANGXX and ThreadSanitizer, builds the TARGETs and runs the
#       tests labelled with their names (each gtest binary's tests carry its name as a label).
#
# Exits 0 when every selected test passed, else 1, after printing the failed tests' output.
# JOBS (default 2) is the build's and CTest's parallelism.
set -uo pipefail
mode=${1:?mode: asan or tsan}
source_dir=${2:?source dir}
tree=${3:?build tree}
jobs=${JOBS:-2}

case "${mode}" in
  asan)
    [ -f "${tree}/CMakeCache.txt" ] || { echo "sanitized_ctest: ${tree} is not configured (fuzz/build makes it)" >&2; exit 1; }
    echo "== build (ASan + UBSan): ${tree}"
    cmake --build "${tree}" --parallel "${jobs}" || exit 1
    # LeakSanitizer is on with ASan; UBSan aborts on the first report (-fno-sanitize-recover).
    export ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:${ASAN_OPTIONS}}"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:${UBSAN_OPTIONS}}"
    select=(-E '^(kube/|fuzz/|soak/|sim/cli$|cli/thread-limit$)')
    ;;
  tsan)
    clangxx=${4:?clang++}
    generator=${5:?generator}
    targets=${6:?targets}
    flags="-O1 -gline-tables-only -fsanitize=thread -fno-omit-frame-pointer"
    # A unity build, as the ASan tree (fuzz/build_fuzzers.cmake says why).
    cache="${tree}/CMakeCache.txt"
    if [ ! -f "${cache}" ] || ! grep -qxF "CMAKE_CXX_FLAGS:STRING=${flags}" "${cache}" ||
      ! grep -qxF "CMAKE_UNITY_BUILD:BOOL=ON" "${cache}"; then
      mkdir -p "${tree}" && rm -f "${tree}/CMakeCache.txt"
      echo "== configure (TSan): ${tree}"
      cmake -S "${source_dir}" -B "${tree}" -G "${generator}" -DCMAKE_CXX_COMPILER="${clangxx}" \
        -DCMAKE_BUILD_TYPE= "-DCMAKE_CXX_FLAGS=${flags}" -DMUSTER_WERROR=OFF \
        -DMUSTER_BUILD_BENCH=OFF -DMUSTER_BUILD_FUZZ=OFF -DCMAKE_UNITY_BUILD:BOOL=ON \
        >"${tree}/configure.log" 2>&1 ||
        { cat "${tree}/configure.log"; exit 1; }
    fi
    IFS=, read -r -a names <<<"${targets}"
    echo "== build (TSan): ${names[*]}"
    cmake --build "${tree}" --parallel "${jobs}" --target "${names[@]}" || exit 1
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:${TSAN_OPTIONS}}"
    select=(-L "^($(IFS='|'; echo "${names[*]}"))\$")
    ;;
  *)
    echo "sanitized_ctest: unknown mode ${mode}" >&2
    exit 2
    ;;
esac

echo "== ctest (${mode}) ${select[*]}"
start=${SECONDS}
ctest --test-dir "${tree}" --parallel "${jobs}" --no-tests=error "${select[@]}"
rc=$?
echo "== ctest (${mode}) exited ${rc} after $((SECONDS - start)) s"
if [ "${rc}" -ne 0 ]; then
  CI_FAILURE_LINES=${CI_FAILURE_LINES:-60} "${source_dir}/scripts/ci-failure-report" "${tree}"
  exit 1
fi
