// Command protobuf-bodies writes the request bodies that client-go (and so kubectl 1.32) sends as
// application/vnd.kubernetes.protobuf, with the JSON client-go would have sent instead, for the
// decoder tests of src/apiserver/protobuf/protobuf.cc:
//
//	go run . OUTDIR     (GOFLAGS=-mod=mod; k8s.io/api and k8s.io/apimachinery v0.37.2)
//
// For each fixture NAME it writes OUTDIR/NAME.pb (the "k8s\0" envelope, what the protobuf
// serializer of a client for the object's group version writes) and OUTDIR/NAME.json (the same
// object through the JSON serializer). The objects are what kubectl's generators build (`create
// configmap`, `create service clusterip`, `create priorityclass`, `auth can-i`, drain's
// DeleteOptions and Eviction) plus a few that reach the special types: Time, MicroTime,
// Quantity, IntOrString, FieldsV1, RawExtension, ExtraValue.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type fixture struct {
	name string
	gv   schema.GroupVersion
	obj  runtime.Object
	// What NAME.json holds when it is not obj through the JSON serializer: encoding/json cannot
	// write a RawExtension holding protobuf, so the list's JSON holds that item as JSON.
	asJSON runtime.Object
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: protobuf-bodies OUTDIR")
		os.Exit(2)
	}
	out := os.Args[1]
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, schedulingv1.AddToScheme, coordinationv1.AddToScheme,
		authorizationv1.AddToScheme, authenticationv1.AddToScheme, policyv1.AddToScheme,
	} {
		must(add(scheme))
	}
	codecs := serializer.NewCodecFactory(scheme)
	pb := protobuf.NewSerializer(scheme, scheme)
	js := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme, scheme,
		jsonserializer.SerializerOptions{})
	encode := func(enc runtime.Encoder, f fixture) []byte {
		data, err := runtime.Encode(codecs.EncoderForVersion(enc, f.gv), f.obj)
		must(err)
		return data
	}

	must(os.MkdirAll(out, 0o755))
	pbOf := func(f fixture) []byte { return encode(pb, f) }
	jsonOf := func(f fixture) []byte { return encode(js, f) }
	for _, f := range fixtures(pbOf, jsonOf) {
		must(os.WriteFile(filepath.Join(out, f.name+".pb"), encode(pb, f), 0o644))
		if f.asJSON != nil {
			f.obj = f.asJSON
		}
		must(os.WriteFile(filepath.Join(out, f.name+".json"), encode(js, f), 0o644))
	}
}

func fixtures(protobufOf, jsonOf func(fixture) []byte) []fixture {
	created := metav1.NewTime(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC))
	renewed := metav1.NewMicroTime(time.Date(2024, 5, 6, 7, 8, 10, 123456789, time.UTC))
	acquired := metav1.NewMicroTime(time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC))
	preempt := corev1.PreemptLowerPriority
	never := corev1.PreemptNever
	grace := int64(0)
	background := metav1.DeletePropagationBackground
	foreground := metav1.DeletePropagationForeground
	uid := types.UID("7b0c3bd1-0f4c-4a3e-9d2b-93c1c6b0a001")
	holder := "muster-scheduler-1"
	duration := int32(15)
	transitions := int32(3)
	deadline := int64(600)
	controller := true
	scratchLimit := resource.MustParse("512Mi")
	namespace := fixture{"namespace", corev1.SchemeGroupVersion, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"team": "ml"}},
	}, nil}
	configMapJSON := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c2"},"data":{"k":"v"}}`)
	return []fixture{
		// kubectl create configmap c1 --from-literal=a=b --from-literal=empty= --from-file=bin
		{"configmap", corev1.SchemeGroupVersion, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:        "c1",
				Labels:      map[string]string{"app": "web", "tier": "front"},
				Annotations: map[string]string{"note": "grüße ✓"},
			},
			Data:       map[string]string{"a": "b", "empty": "", "multi": "line one\nline two\n"},
			BinaryData: map[string][]byte{"bin": {0x00, 0x01, 0x02, 0xfe, 0xff}},
		}, nil},
		// kubectl create service clusterip s1 --tcp=80:8080, plus a named target port.
		{"service", corev1.SchemeGroupVersion, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "s1", Labels: map[string]string{"app": "s1"}},
			Spec: corev1.ServiceSpec{
				Ports: []corev1.ServicePort{
					{Name: "80-8080", Protocol: corev1.ProtocolTCP, Port: 80,
						TargetPort: intstr.FromInt32(8080)},
					{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443,
						TargetPort: intstr.FromString("https")},
				},
				Selector: map[string]string{"app": "s1"},
				Type:     corev1.ServiceTypeClusterIP,
			},
		}, nil},
		// kubectl create priorityclass p1 --value=10 --description=... --preemption-policy=Never
		{"priorityclass", schedulingv1.SchemeGroupVersion, &schedulingv1.PriorityClass{
			ObjectMeta:       metav1.ObjectMeta{Name: "p1"},
			Value:            10,
			Description:      "batch jobs",
			PreemptionPolicy: &never,
		}, nil},
		{"priorityclass-negative", schedulingv1.SchemeGroupVersion, &schedulingv1.PriorityClass{
			ObjectMeta:       metav1.ObjectMeta{Name: "low"},
			Value:            -2147483648,
			GlobalDefault:    true,
			PreemptionPolicy: &preempt,
		}, nil},
		// What leader election writes.
		{"lease", coordinationv1.SchemeGroupVersion, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "muster-scheduler", Namespace: "kube-system"},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       &holder,
				LeaseDurationSeconds: &duration,
				AcquireTime:          &acquired,
				RenewTime:            &renewed,
				LeaseTransitions:     &transitions,
			},
		}, nil},
		// A pod as `kubectl debug --copy-to` sends it: copied from a live one, times and all.
		{"pod", corev1.SchemeGroupVersion, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:              "trainer-debug",
				Namespace:         "default",
				CreationTimestamp: created,
				Generation:        2,
				Labels:            map[string]string{"job": "trainer"},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "trainer",
					UID: "0d9c7a5e-5f0e-4b7e-8a55-2b6a3f7c1d20", Controller: &controller,
				}},
				ManagedFields: []metav1.ManagedFieldsEntry{{
					Manager: "kubectl-debug", Operation: metav1.ManagedFieldsOperationUpdate,
					APIVersion: "v1", Time: &created, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:job":{}}}}`)},
				}},
			},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name:    "main",
					Image:   "pytorch/pytorch:2.3.0",
					Command: []string{"python", "-c", ""},
					Env: []corev1.EnvVar{{Name: "RANK", Value: "0"}, {Name: "EMPTY"}, {
						Name: "NODE",
						ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
							FieldPath: "spec.nodeName"}},
					}},
					Ports: []corev1.ContainerPort{{ContainerPort: 29500, Protocol: corev1.ProtocolTCP}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("500m"),
							corev1.ResourceMemory: resource.MustParse("1Gi"),
						},
						Limits: corev1.ResourceList{
							"nvidia.com/gpu":      resource.MustParse("2"),
							corev1.ResourceMemory: resource.MustParse("1.5Gi"),
						},
					},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
						HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")},
					}},
				}},
				// Volume, ConfigMapVolumeSource and EphemeralContainer embed structs inline.
				Volumes: []corev1.Volume{
					{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "c1"},
						Items:                []corev1.KeyToPath{{Key: "a", Path: "a.txt"}},
					}}},
					{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
						SizeLimit: &scratchLimit,
					}}},
				},
				EphemeralContainers: []corev1.EphemeralContainer{{
					EphemeralContainerCommon: corev1.EphemeralContainerCommon{
						Name: "debugger", Image: "busybox:1.37", Stdin: true, TTY: true,
					},
					TargetContainerName: "main",
				}},
				RestartPolicy:         corev1.RestartPolicyNever,
				ActiveDeadlineSeconds: &deadline,
				SchedulerName:         "volcano",
			},
		}, nil},
		// kubectl create namespace n1
		namespace,
		// kubectl drain / delete: the DeleteOptions of a core client.
		{"deleteoptions", corev1.SchemeGroupVersion, &metav1.DeleteOptions{
			GracePeriodSeconds: &grace,
			Preconditions:      &metav1.Preconditions{UID: &uid},
			PropagationPolicy:  &foreground,
			DryRun:             []string{metav1.DryRunAll},
		}, nil},
		// kubectl drain: the Eviction it POSTs to pods/eviction.
		{"eviction", policyv1.SchemeGroupVersion, &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Name: "trainer-0", Namespace: "default"},
			DeleteOptions: &metav1.DeleteOptions{PropagationPolicy: &background},
		}, nil},
		// kubectl auth can-i list pods -n default
		{"selfsubjectaccessreview", authorizationv1.SchemeGroupVersion,
			&authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{
					ResourceAttributes: &authorizationv1.ResourceAttributes{
						Namespace: "default", Verb: "list", Resource: "pods",
					},
				},
			}, nil},
		// The map of ExtraValue (a []string in Go) kube-apiserver's webhooks send.
		{"subjectaccessreview", authorizationv1.SchemeGroupVersion,
			&authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{
					NonResourceAttributes: &authorizationv1.NonResourceAttributes{
						Path: "/healthz", Verb: "get"},
					User:   "alice",
					Groups: []string{"system:authenticated"},
					Extra: map[string]authorizationv1.ExtraValue{
						"scopes": {"view", "edit"}, "none": {},
					},
				},
			}, nil},
		{"selfsubjectreview", authenticationv1.SchemeGroupVersion,
			&authenticationv1.SelfSubjectReview{}, nil},
		// A v1.List holding one object as JSON and one in the protobuf envelope (RawExtension).
		{"list", corev1.SchemeGroupVersion, &corev1.List{
			Items: []runtime.RawExtension{{Raw: configMapJSON}, {Raw: protobufOf(namespace)}},
		}, &corev1.List{
			Items: []runtime.RawExtension{{Raw: configMapJSON}, {Raw: jsonOf(namespace)}},
		}},
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "protobuf-bodies:", err)
		os.Exit(1)
	}
}
