# Kubernetes' protobuf schemas, for the protobuf request bodies kubectl sends (protobuf.h).
#
# Where they come from: the generated.proto files of the Go modules k8s.io/api and
# k8s.io/apimachinery at MUSTER_KUBE_SCHEMA_VERSION, the files kube's own gogo-generated Go code is
# made from. None of them is committed. At configure time `go mod download -json` names each
# module's folder (the Go module cache, else fetched through GOPROXY); at build time Debian's
# protoc reads them under their import paths (-Ik8s.io/api=<folder>) into one FileDescriptorSet
# with every import, and embed_files.cmake writes it into a .cc as a string literal. At run
# time protobuf.cc builds a DescriptorPool from it and parses with DynamicMessage: no generated
# C++ code.
#
# Without Go (or without a module proxy): -DMUSTER_KUBE_API_DIR=<k8s.io/api@version folder>
# -DMUSTER_KUBE_APIMACHINERY_DIR=<k8s.io/apimachinery@version folder>, e.g. unpacked module zips.
#
# Defines muster_kube_descriptors (a static library with KubeDescriptorSet(), kube_schemas.h) and
# the global properties MUSTER_KUBE_API_DIR and MUSTER_KUBE_APIMACHINERY_DIR (what was found, for
# the nested fuzz build).

set(MUSTER_KUBE_SCHEMA_VERSION v0.37.2 CACHE STRING
    "Version of the k8s.io/api and k8s.io/apimachinery Go modules whose .proto files are used")
set(MUSTER_KUBE_API_DIR "" CACHE PATH
    "Folder of the k8s.io/api module (empty: ask `go mod download`)")
set(MUSTER_KUBE_APIMACHINERY_DIR "" CACHE PATH
    "Folder of the k8s.io/apimachinery module (empty: ask `go mod download`)")
# The API groups whose kinds protobuf.cc decodes (policy/v1beta1 for the Eviction of clients that
# predate policy/v1; batch/v1 for `kubectl create job` and `create cronjob`); their imports
# (meta/v1, api/resource, util/intstr, runtime, ...) come along
# by --include_imports.
set(MUSTER_KUBE_PROTO_GROUPS
    core/v1 scheduling/v1 coordination/v1 authorization/v1 authentication/v1 policy/v1
    policy/v1beta1 batch/v1)

# muster_kube_module_dir(MODULE OUT): OUT = the folder of MODULE@MUSTER_KUBE_SCHEMA_VERSION.
function(muster_kube_module_dir module out)
  find_program(MUSTER_GO go DOC "Go toolchain, to locate k8s.io/api and k8s.io/apimachinery")
  if(NOT MUSTER_GO)
    message(FATAL_ERROR
      "Kubernetes' protobuf schemas: `go` is not installed, so ${module}@"
      "${MUSTER_KUBE_SCHEMA_VERSION} cannot be located. Install Go (Debian: golang-go), or "
      "point MUSTER_KUBE_API_DIR and MUSTER_KUBE_APIMACHINERY_DIR at the modules' folders.")
  endif()
  # Outside any module (an empty folder), so that no go.mod or go.work around the build tree has
  # a say; GOPROXY, GOMODCACHE and GOFLAGS other than -mod come from the environment as usual.
  set(scratch ${CMAKE_CURRENT_BINARY_DIR}/go-mod-download)
  file(MAKE_DIRECTORY ${scratch})
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env GOWORK=off GO111MODULE=on GOFLAGS=-mod=mod
            ${MUSTER_GO} mod download -json ${module}@${MUSTER_KUBE_SCHEMA_VERSION}
    WORKING_DIRECTORY ${scratch}
    RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE errors)
  string(JSON dir ERROR_VARIABLE no_dir GET "${output}" Dir)
  if(NOT result EQUAL 0 OR no_dir OR NOT IS_DIRECTORY "${dir}")
    string(JSON why ERROR_VARIABLE no_why GET "${output}" Error)
    if(no_why)
      set(why "${errors}")
    endif()
    string(STRIP "${why}" why)
    message(FATAL_ERROR
      "Kubernetes' protobuf schemas: `go mod download -json ${module}@"
      "${MUSTER_KUBE_SCHEMA_VERSION}` failed (is the Go module proxy reachable? GOPROXY, "
      "GOFLAGS=-mod=mod): ${why}\nOffline, point MUSTER_KUBE_API_DIR and "
      "MUSTER_KUBE_APIMACHINERY_DIR at the modules' folders.")
  endif()
  set(${out} ${dir} PARENT_SCOPE)
endfunction()

set(kube_api_dir ${MUSTER_KUBE_API_DIR})
if(NOT kube_api_dir)
  muster_kube_module_dir(k8s.io/api kube_api_dir)
endif()
set(kube_apimachinery_dir ${MUSTER_KUBE_APIMACHINERY_DIR})
if(NOT kube_apimachinery_dir)
  muster_kube_module_dir(k8s.io/apimachinery kube_apimachinery_dir)
endif()
set_property(GLOBAL PROPERTY MUSTER_KUBE_API_DIR ${kube_api_dir})
set_property(GLOBAL PROPERTY MUSTER_KUBE_APIMACHINERY_DIR ${kube_apimachinery_dir})

set(kube_protos "")
set(kube_proto_files "")
foreach(group ${MUSTER_KUBE_PROTO_GROUPS})
  if(NOT EXISTS ${kube_api_dir}/${group}/generated.proto)
    message(FATAL_ERROR "Kubernetes' protobuf schemas: ${kube_api_dir} has no "
                        "${group}/generated.proto (not k8s.io/api?)")
  endif()
  list(APPEND kube_protos k8s.io/api/${group}/generated.proto)
  list(APPEND kube_proto_files ${kube_api_dir}/${group}/generated.proto)
endforeach()
# What those import (dependencies of the protoc step; protoc itself follows the imports).
set(kube_machinery_protos "")
foreach(package api/resource apis/meta/v1 runtime runtime/schema util/intstr)
  if(NOT EXISTS ${kube_apimachinery_dir}/pkg/${package}/generated.proto)
    message(FATAL_ERROR "Kubernetes' protobuf schemas: ${kube_apimachinery_dir} has no "
                        "pkg/${package}/generated.proto (not k8s.io/apimachinery?)")
  endif()
  list(APPEND kube_machinery_protos ${kube_apimachinery_dir}/pkg/${package}/generated.proto)
endforeach()

set(kube_gen ${CMAKE_CURRENT_BINARY_DIR}/kube_schemas)
add_custom_command(
  OUTPUT ${kube_gen}/kube_descriptors.pb
  COMMAND ${CMAKE_COMMAND} -E make_directory ${kube_gen}
  COMMAND ${Protobuf_PROTOC_EXECUTABLE}
          -Ik8s.io/api=${kube_api_dir} -Ik8s.io/apimachinery=${kube_apimachinery_dir}
          --include_imports --descriptor_set_out=${kube_gen}/kube_descriptors.pb ${kube_protos}
  DEPENDS ${kube_proto_files} ${kube_machinery_protos}
  COMMENT "protoc: Kubernetes ${MUSTER_KUBE_SCHEMA_VERSION} schemas (${MUSTER_KUBE_PROTO_GROUPS})"
  VERBATIM)
# embed_files.cmake (included by CMakeLists.txt before this file) writes it into a .cc.
muster_embed_files(${kube_gen}/kube_descriptors.cc
  HEADER apiserver/protobuf/kube_schemas.h NAMESPACE muster::apiserver FUNCTION KubeDescriptorFiles
  FILES ${kube_gen}/kube_descriptors.pb)
add_library(muster_kube_descriptors STATIC ${kube_gen}/kube_descriptors.cc)
