#!/usr/bin/env bash
# End-to-end: a CustomResourceDefinition against `muster up`, driven by the real kubectl. A CRD
# with a structural schema, a short name, printer columns and the status subresource is applied
# and established; custom resources are created (pruned and defaulted by the schema), one that
# breaks the schema is refused with 422 naming the field and not stored; `kubectl get <short
# name>` shows the printer columns, `kubectl explain <kind>.spec` the schema's fields; a merge
# patch is seen by `kubectl get -w`; `kubectl apply` of muster's own Volcano CRDs is accepted
# and changes nothing; deleting the CRD deletes its resources and stops serving them (applied
# again, it serves none).
# One PASS/FAIL line per check; the last line is "N passed, M failed". Exit 0 only when nothing
# failed, 77 (skipped) when kubectl is not installed.
#
# Usage: crd_e2e.sh MUSTER_BINARY        (KUBECTL=... to use another kubectl)
set -u

MUSTER=${1:?usage: crd_e2e.sh MUSTER_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=e2e_lib.sh
. "$here/e2e_lib.sh"
begin_e2e

cat >"$work/cluster.yaml" <<'EOF'
nodePools:
  - name: sim
    allocatable: {cpu: "4", memory: 8Gi, pods: "20"}
EOF
start_muster up "$MUSTER" up --config "$work/cluster.yaml" --data-dir "$work/data" \
  --listen 127.0.0.1:0 --no-summary || exit_not_started up "muster up"
export KUBECONFIG=$muster_kubeconfig

cat >"$work/crd.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: string, jsonPath: .spec.size}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: string, enum: [small, large], description: How big the widget is.}
              replicas: {type: integer, minimum: 0, maximum: 10, default: 1}
          status:
            type: object
            properties:
              ready: {type: boolean}
EOF
widget() {  # widget NAME SPEC: a Widget's manifest
  printf 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: %s}\nspec: %s\n' "$1" "$2"
}
widget small '{size: small}' >"$work/small.yaml"
widget large '{size: large, replicas: 3}' >"$work/large.yaml"
widget bad '{size: small, replicas: "three"}' >"$work/bad.yaml"

expect "apply the CRD" "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created" \
  k apply -f "$work/crd.yaml"
expect "it is established at once" "condition met" \
  k wait --for=condition=established crd/widgets.example.com --timeout=10s
expect_re "kubectl get crd shows it" '^widgets\.example\.com +[0-9]{4}-' k get crd
expect_re "discovery lists its short name" '^widgets +wd +example\.com/v1 +true +Widget$' \
  k api-resources --api-group=example.com

expect "create a widget" "widget.example.com/small created" k apply -f "$work/small.yaml"
expect "create another" "widget.example.com/large created" k apply -f "$work/large.yaml"
expect "a widget breaking the schema is refused naming the field" \
  'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer' \
  k apply -f "$work/bad.yaml"
expect_eq "nothing refused was stored" "" k get widgets bad -o name --ignore-not-found
expect_eq "the schema's default is filled in" "1" \
  k get widget small -o jsonpath='{.spec.replicas}'
expect_re "kubectl get <short name> shows the printer columns" '^small +small +1 *$' k get wd
expect_re "with their headers" '^NAME +SIZE +REPLICAS$' k get wd
expect "kubectl explain <kind>.spec shows the schema's fields" "How big the widget is." \
  k explain widget.spec

# A watch, then a change it must see.
timeout 60 "$KUBECTL" --cache-dir "$work/cache" get wd -w >"$work/watch.out" 2>&1 &
stop_at_exit $!
watch_listed() { grep -q '^large' "$work/watch.out"; }
eventually "kubectl get -w lists the widgets" 30 watch_listed
expect "kubectl patch --type=merge" "widget.example.com/small patched" \
  k patch widget small --type=merge -p '{"spec":{"size":"large"}}'
watch_saw_patch() { grep -qE '^small +large +1' "$work/watch.out"; }
eventually "kubectl get -w sees the update" 30 watch_saw_patch
expect "a strategic merge patch is refused for a custom resource" "is not supported" \
  k patch widget small -p '{"spec":{"replicas":2}}'
expect "a patch past the schema's maximum is refused" "should be less than or equal to 10" \
  k patch widget small --type=merge -p '{"spec":{"replicas":11}}'

sed 's/shortNames: \[wd\]/shortNames: [wd, wdg]/' "$work/crd.yaml" >"$work/crd2.yaml"
expect "kubectl apply of a changed CRD" "widgets.example.com configured" k apply -f "$work/crd2.yaml"
expect_re "its new short name is served" '^small +large' k get wdg

expect "muster's own Volcano CRDs apply" "jobs.batch.volcano.sh created" \
  k apply -f "$here/../../deploy/crds/volcano-crds.yaml"
expect_re "and Volcano Jobs are still muster's" '^jobs +vcjob,vj +batch\.volcano\.sh/v1alpha1' \
  k api-resources --api-group=batch.volcano.sh

# A CRD whose schema is malformed: refused naming the field, nothing stored.
sed 's/widgets/gizmos/g; s/widget/gizmo/; s/Widget/Gizmo/g; s/shortNames: \[wd\]/shortNames: [gz]/;
  s/size: {type: string/size: {type: strin/' "$work/crd.yaml" >"$work/gizmo-crd.yaml"
expect "a CRD with a malformed schema is refused naming the field" \
  'openAPIV3Schema.properties[spec].properties[size].type: Unsupported value: "strin"' \
  k apply -f "$work/gizmo-crd.yaml"
expect_eq "nothing of it is stored" "" k get crd gizmos.example.com -o name --ignore-not-found
expect "delete the CRD" 'customresourcedefinition.apiextensions.k8s.io "widgets.example.com" deleted' \
  k delete crd widgets.example.com --timeout=30s
expect "widgets are no longer served" "the server could not find the requested resource" k get wd
# Applied again, the CRD serves no widget: they were deleted with it, not only hidden.
expect "apply the CRD again" "created" k apply -f "$work/crd.yaml"
k wait --for=condition=established crd/widgets.example.com --timeout=10s >/dev/null 2>&1
expect "its widgets were deleted with it" "No resources found in default namespace." k get wd

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
