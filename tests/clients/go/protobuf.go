package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const protobufType = "application/vnd.kubernetes.protobuf"

// mediaCounter counts the Content-Types of the requests sent and the responses received, to tell
// what went over the wire (client-go reads a JSON answer to a protobuf client without a word).
type mediaCounter struct {
	mu       sync.Mutex
	sent     map[string]int
	received map[string]int
}

type countingTransport struct {
	next http.RoundTripper
	c    *mediaCounter
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if req.Body != nil {
		t.c.sent[req.Method+" "+req.Header.Get("Content-Type")]++
	}
	if err == nil {
		t.c.received[resp.Header.Get("Content-Type")]++
	}
	return resp, err
}

func (c *mediaCounter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("request bodies %v; responses %v", c.sent, c.received)
}

// testProtobuf: typed clients configured as kube's own components are, protobuf first: write,
// read, update and delete a ConfigMap, a Service and a Lease; list pods.
func testProtobuf(ctx context.Context, e *env) {
	t := e.t
	config := rest.CopyConfig(e.config)
	config.ContentType = protobufType
	config.AcceptContentTypes = protobufType + ",application/json"
	media := &mediaCounter{sent: map[string]int{}, received: map[string]int{}}
	config.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return countingTransport{rt, media}
	}
	clients, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.check("protobuf: a clientset that speaks protobuf", false, "%v", err)
		return
	}
	defer func() { fmt.Printf("    note: over the wire, %s\n", media) }()

	// --- ConfigMap -------------------------------------------------------------------------------
	cms := clients.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "pb-settings", Labels: map[string]string{"app": "trainer"}},
		Data:       map[string]string{"lr": "0.1"},
	}, metav1.CreateOptions{})
	t.check("protobuf: create a ConfigMap", err == nil && cm.Data["lr"] == "0.1" && cm.UID != "",
		"%s", describe(err))
	if err == nil {
		got, err := cms.Get(ctx, "pb-settings", metav1.GetOptions{})
		t.check("protobuf: get the ConfigMap", err == nil && got.Data["lr"] == "0.1" &&
			got.Labels["app"] == "trainer", "%s", describe(err))
		if err == nil {
			got.Data["lr"] = "0.01"
			updated, err := cms.Update(ctx, got, metav1.UpdateOptions{})
			t.check("protobuf: update the ConfigMap", err == nil && updated.Data["lr"] == "0.01" &&
				updated.ResourceVersion != got.ResourceVersion, "%s", describe(err))
		}
		deleteAndGone(ctx, t, "ConfigMap", func() error {
			return cms.Delete(ctx, "pb-settings", metav1.DeleteOptions{})
		}, func() error { _, err := cms.Get(ctx, "pb-settings", metav1.GetOptions{}); return err })
	}

	// --- Service ---------------------------------------------------------------------------------
	services := clients.CoreV1().Services("default")
	svc, err := services.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "pb-trainer"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "trainer"},
			Ports: []corev1.ServicePort{{Name: "grpc", Port: 2222, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromInt32(2222)}},
		},
	}, metav1.CreateOptions{})
	t.check("protobuf: create a Service", err == nil && len(svc.Spec.Ports) == 1 &&
		svc.Spec.Ports[0].TargetPort == intstr.FromInt32(2222), "%s", describe(err))
	if err == nil {
		got, err := services.Get(ctx, "pb-trainer", metav1.GetOptions{})
		t.check("protobuf: get the Service", err == nil && len(got.Spec.Ports) == 1 &&
			got.Spec.Ports[0].Port == 2222 && got.Spec.Selector["app"] == "trainer", "%s",
			describe(err))
		if err == nil {
			got.Spec.Ports = append(got.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9090,
				Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("metrics")})
			updated, err := services.Update(ctx, got, metav1.UpdateOptions{})
			t.check("protobuf: update the Service (a second port, a named targetPort)",
				err == nil && len(updated.Spec.Ports) == 2 &&
					updated.Spec.Ports[1].TargetPort == intstr.FromString("metrics"),
				"%s", describe(err))
		}
		deleteAndGone(ctx, t, "Service", func() error {
			return services.Delete(ctx, "pb-trainer", metav1.DeleteOptions{})
		}, func() error { _, err := services.Get(ctx, "pb-trainer", metav1.GetOptions{}); return err })
	}

	// --- Lease (MicroTime fields) ----------------------------------------------------------------
	leases := clients.CoordinationV1().Leases("default")
	holder, duration := "trainer-0", int32(15)
	renew := metav1.NewMicroTime(time.Now().Truncate(time.Microsecond))
	lease, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "pb-leader"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration,
			AcquireTime: &renew, RenewTime: &renew},
	}, metav1.CreateOptions{})
	t.check("protobuf: create a Lease", err == nil && lease.Spec.HolderIdentity != nil &&
		*lease.Spec.HolderIdentity == holder, "%s", describe(err))
	if err == nil {
		got, err := leases.Get(ctx, "pb-leader", metav1.GetOptions{})
		t.check("protobuf: get the Lease (renewTime to the microsecond)", err == nil &&
			got.Spec.RenewTime != nil && got.Spec.RenewTime.Equal(&renew) &&
			got.Spec.LeaseDurationSeconds != nil && *got.Spec.LeaseDurationSeconds == duration,
			"%s, spec %+v (sent renewTime %v)", describe(err), leaseSpec(got), renew)
		if err == nil {
			next := "trainer-1"
			got.Spec.HolderIdentity = &next
			updated, err := leases.Update(ctx, got, metav1.UpdateOptions{})
			t.check("protobuf: update the Lease's holder", err == nil &&
				updated.Spec.HolderIdentity != nil && *updated.Spec.HolderIdentity == next,
				"%s", describe(err))
		}
		deleteAndGone(ctx, t, "Lease", func() error {
			return leases.Delete(ctx, "pb-leader", metav1.DeleteOptions{})
		}, func() error { _, err := leases.Get(ctx, "pb-leader", metav1.GetOptions{}); return err })
	}

	// --- list pods, against what the JSON client lists ------------------------------------------
	var pbNames, jsonNames []string
	var pbErr, jsonErr error
	same := eventually(10*time.Second, func() bool {
		pbNames, pbErr = podNames(ctx, clients)
		jsonNames, jsonErr = podNames(ctx, e.clients)
		return pbErr == nil && jsonErr == nil &&
			strings.Join(pbNames, ",") == strings.Join(jsonNames, ",")
	})
	t.check("protobuf: list pods in all namespaces, as the JSON client lists them", same,
		"protobuf: %s %v; json: %s %v", describe(pbErr), pbNames, describe(jsonErr), jsonNames)
}

func leaseSpec(l *coordinationv1.Lease) any {
	if l == nil {
		return nil
	}
	return l.Spec
}

// deleteAndGone: the delete succeeds and a get is NotFound after it.
func deleteAndGone(ctx context.Context, t *tally, kind string, del, get func() error) {
	err := del()
	t.check("protobuf: delete the "+kind, err == nil, "%s", describe(err))
	if err != nil {
		return
	}
	var last error
	gone := eventually(10*time.Second, func() bool {
		last = get()
		return apierrors.IsNotFound(last)
	})
	t.check("protobuf: the deleted "+kind+" is NotFound", gone, "%s", describe(last))
}

func podNames(ctx context.Context, clients kubernetes.Interface) ([]string, error) {
	list, err := clients.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Items))
	for _, p := range list.Items {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	sort.Strings(names)
	return names, nil
}
