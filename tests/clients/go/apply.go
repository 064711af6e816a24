package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

const (
	managerA  = "manager-a"
	managerB  = "manager-b"
	appliedCM = "ssa-settings"
)

// owns: whether `manager`'s Apply entry in managedFields holds the field at `path` (FieldsV1
// keys, "f:data", "f:a").
func owns(cm *corev1.ConfigMap, manager string, path ...string) bool {
	if cm == nil {
		return false
	}
	for _, entry := range cm.ManagedFields {
		if entry.Manager != manager || entry.Operation != metav1.ManagedFieldsOperationApply ||
			entry.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if json.Unmarshal(entry.FieldsV1.Raw, &fields) != nil {
			continue
		}
		node := fields
		for _, key := range path {
			next, ok := node[key].(map[string]any)
			if !ok {
				node = nil
				break
			}
			node = next
		}
		if node != nil {
			return true
		}
	}
	return false
}

// managed is the managedFields of cm, for a FAIL line.
func managed(cm *corev1.ConfigMap) string {
	if cm == nil {
		return "no object"
	}
	var b strings.Builder
	for _, entry := range cm.ManagedFields {
		raw := ""
		if entry.FieldsV1 != nil {
			raw = string(entry.FieldsV1.Raw)
		}
		fmt.Fprintf(&b, "{manager %q operation %q fields %s} ", entry.Manager, entry.Operation, raw)
	}
	if b.Len() == 0 {
		return "no managedFields"
	}
	return b.String()
}

// testServerSideApply: two field managers apply one ConfigMap, as two controllers (or kubectl
// apply --server-side and a controller) share an object.
func testServerSideApply(ctx context.Context, e *env) {
	t := e.t
	cms := e.clients.CoreV1().ConfigMaps("default")
	apply := func(manager string, data map[string]string, force bool) (*corev1.ConfigMap, error) {
		return cms.Apply(ctx, corev1ac.ConfigMap(appliedCM, "default").WithData(data),
			metav1.ApplyOptions{FieldManager: manager, Force: force})
	}
	defer func() { _ = cms.Delete(ctx, appliedCM, metav1.DeleteOptions{}) }()

	cm, err := apply(managerA, map[string]string{"a": "1"}, false)
	t.check("apply: manager A creates the ConfigMap with data.a", err == nil &&
		cm.Data["a"] == "1", "%s", describe(err))
	if err != nil {
		return
	}
	cm, err = apply(managerB, map[string]string{"b": "2"}, false)
	t.check("apply: manager B applies data.b; data.a and data.b both survive", err == nil &&
		len(cm.Data) == 2 && cm.Data["a"] == "1" && cm.Data["b"] == "2", "%s, data %v",
		describe(err), dataOf(cm))
	t.check("apply: managedFields shows A owning data.a and B owning data.b", err == nil &&
		owns(cm, managerA, "f:data", "f:a") && owns(cm, managerB, "f:data", "f:b") &&
		!owns(cm, managerA, "f:data", "f:b") && !owns(cm, managerB, "f:data", "f:a"),
		"%s", managed(cm))

	refused, err := apply(managerB, map[string]string{"a": "3", "b": "2"}, false)
	answer := describe(err)
	if err == nil {
		answer = fmt.Sprintf("200, the apply went through: data %v, %s", refused.Data,
			managed(refused))
	}
	status, isStatus := err.(apierrors.APIStatus)
	message := ""
	if isStatus {
		message = status.Status().Message
	}
	t.check("apply: B applying data.a without force is 409 Conflict naming .data.a and manager A",
		apierrors.IsConflict(err) && strings.Contains(message, ".data.a") &&
			strings.Contains(message, `conflict with "`+managerA+`"`), "%s", answer)
	cause := false
	if isStatus && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			cause = cause || (c.Type == metav1.CauseTypeFieldManagerConflict && c.Field == ".data.a" &&
				strings.Contains(c.Message, managerA))
		}
	}
	t.check("apply: the 409's details hold a FieldManagerConflict cause for .data.a", cause, "%s",
		answer)
	got, getErr := cms.Get(ctx, appliedCM, metav1.GetOptions{})
	t.check("apply: the refused apply changed nothing (data.a is still A's 1)", getErr == nil &&
		got.Data["a"] == "1", "%s, data %v", describe(getErr), dataOf(got))

	cm, err = apply(managerB, map[string]string{"a": "3", "b": "2"}, true)
	t.check("apply: with force, B's data.a wins", err == nil && cm.Data["a"] == "3" &&
		cm.Data["b"] == "2", "%s, data %v", describe(err), dataOf(cm))
	t.check("apply: managedFields shows B owning data.a after the forced apply, A no longer",
		err == nil && owns(cm, managerB, "f:data", "f:a") && !owns(cm, managerA, "f:data", "f:a"),
		"%s", managed(cm))
}

func dataOf(cm *corev1.ConfigMap) map[string]string {
	if cm == nil {
		return nil
	}
	return cm.Data
}
