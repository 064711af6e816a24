# Configures (once) and builds the libFuzzer targets with clang, ASan and UBSan in BINARY_DIR,
# from the same sources as the calling build. Run by the fuzz/build test (fuzz/CMakeLists.txt):
#   cmake -DSOURCE_DIR=... -DBINARY_DIR=... -DCLANGXX=... [-DGENERATOR=Ninja] [-DJOBS=2] \
#         [-DKUBE_API_DIR=... -DKUBE_APIMACHINERY_DIR=...] -P build_fuzzers.cmake
# KUBE_*_DIR: the k8s.io/api and k8s.io/apimachinery module folders the calling build found
# (src/apiserver/protobuf/kube_schemas.cmake), handed on so that the nested configure does not look again.
foreach(var SOURCE_DIR BINARY_DIR CLANGXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "build_fuzzers.cmake: ${var} is required")
  endif()
endforeach()
if(NOT DEFINED GENERATOR OR GENERATOR STREQUAL "")
  set(GENERATOR "Unix Makefiles")
endif()
if(NOT DEFINED JOBS)
  set(JOBS 2)
endif()

# -O1 with line tables only: what libFuzzer's and the sanitizers' guides advise, and against
# RelWithDebInfo a fifth less to compile and a third the size to link. No NDEBUG: asserts hold.
# The same tree builds the unit and end-to-end tests for tests/sanitizers (ASan + UBSan).
set(flags "-O1 -gline-tables-only -fsanitize=fuzzer-no-link,address,undefined")
string(APPEND flags " -fno-sanitize-recover=undefined -fno-omit-frame-pointer")
set(kube_dirs "")
if(KUBE_API_DIR AND KUBE_APIMACHINERY_DIR)
  set(kube_dirs -DMUSTER_KUBE_API_DIR=${KUBE_API_DIR}
                -DMUSTER_KUBE_APIMACHINERY_DIR=${KUBE_APIMACHINERY_DIR})
endif()
# A unity build (CMake's, 8 sources a unit): the tree exists to test, is never edited in, and
# parsing gtest, Boost.JSON and Beast once per unit instead of once per file is what its build
# spends most on (docs/benchmarks.md, "Sanitizers in CI"). The release tree stays one unit per
# file, so a source that includes too little still fails there.
set(configured_flags "")
set(configured_unity "")
if(EXISTS ${BINARY_DIR}/CMakeCache.txt)
  file(STRINGS ${BINARY_DIR}/CMakeCache.txt configured_flags REGEX "^CMAKE_CXX_FLAGS:STRING=")
  string(REPLACE "CMAKE_CXX_FLAGS:STRING=" "" configured_flags "${configured_flags}")
  file(STRINGS ${BINARY_DIR}/CMakeCache.txt configured_unity REGEX "^CMAKE_UNITY_BUILD:BOOL=")
endif()
if(NOT configured_flags STREQUAL flags OR NOT configured_unity STREQUAL "CMAKE_UNITY_BUILD:BOOL=ON")
  file(REMOVE ${BINARY_DIR}/CMakeCache.txt)
endif()
if(NOT EXISTS ${BINARY_DIR}/CMakeCache.txt)
  # Warnings are not errors here: this build exists to fuzz, and clang warns about things GCC,
  # the compiler the rest of CI uses, does not.
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BINARY_DIR} -G ${GENERATOR}
            -DCMAKE_CXX_COMPILER=${CLANGXX}
            -DCMAKE_BUILD_TYPE=
            "-DCMAKE_CXX_FLAGS=${flags}"
            -DMUSTER_WERROR=OFF -DMUSTER_BUILD_BENCH=OFF -DMUSTER_BUILD_TESTS=ON
            -DMUSTER_BUILD_FUZZ=ON -DCMAKE_UNITY_BUILD:BOOL=ON ${kube_dirs}
    RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    file(REMOVE ${BINARY_DIR}/CMakeCache.txt)
    message(FATAL_ERROR "build_fuzzers.cmake: configuring the clang build failed")
  endif()
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} --build ${BINARY_DIR} --target muster_fuzzers --parallel ${JOBS}
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "build_fuzzers.cmake: building the fuzzers failed")
endif()
