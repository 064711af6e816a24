package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"
)

var (
	volcanoBatch      = schema.GroupVersion{Group: "batch.volcano.sh", Version: "v1alpha1"}
	volcanoScheduling = schema.GroupVersion{Group: "scheduling.volcano.sh", Version: "v1beta1"}
	jobsResource      = volcanoBatch.WithResource("jobs")
	queuesResource    = volcanoScheduling.WithResource("queues")
	podGroupsResource = volcanoScheduling.WithResource("podgroups")
)

// loadExample reads examples/gpu-gang/NAME, one YAML document, as an unstructured object.
func loadExample(examples, name string) (*unstructured.Unstructured, error) {
	text, err := os.ReadFile(filepath.Join(examples, name))
	if err != nil {
		return nil, err
	}
	return fromYAML(string(text))
}

// fromYAML reads one YAML document as an unstructured object (integers as int64, as the
// dynamic client decodes them).
func fromYAML(text string) (*unstructured.Unstructured, error) {
	data, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return u, nil
}

// gangPodNames: the pods Volcano's job controller makes for `job`, <job>-<task>-<index>.
func gangPodNames(job *unstructured.Unstructured) []string {
	tasks, _, _ := unstructured.NestedSlice(job.Object, "spec", "tasks")
	var names []string
	for _, task := range tasks {
		m, _ := task.(map[string]any)
		name, _, _ := unstructured.NestedString(m, "name")
		replicas, found, _ := unstructured.NestedInt64(m, "replicas")
		if !found {
			replicas = 1
		}
		for i := int64(0); i < replicas; i++ {
			names = append(names, fmt.Sprintf("%s-%s-%d", job.GetName(), name, i))
		}
	}
	return names
}

// volcanoCase is one Volcano kind for the dynamic client's round: an object to create (labelled
// muster-test=<label>, so that a list can select it alone) and an integer spec field that an
// update changes from its value in the object to `updated`.
type volcanoCase struct {
	kind    string
	res     dynamic.ResourceInterface
	obj     string // YAML
	field   []string
	updated int64
}

const dynQueue = `
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: dyn-queue, labels: {muster-test: dynamic-queue}}
spec: {weight: 1, capability: {cpu: "2"}}
`

const dynPodGroup = `
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: dyn-pg, namespace: default, labels: {muster-test: dynamic-podgroup}}
spec: {minMember: 1, queue: dyn-queue}
`

// No toleration of the GPU nodes' taint: its pods stay Pending, out of the other checks' way.
const dynJob = `
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: dyn-job, namespace: default, labels: {muster-test: dynamic-job}}
spec:
  minAvailable: 2
  schedulerName: volcano
  queue: dyn-queue
  tasks:
    - name: worker
      replicas: 2
      template:
        spec:
          containers:
            - name: worker
              image: busybox
              resources: {requests: {cpu: 100m}}
`

// create creates c's object; its name, or "" when that failed.
func (c volcanoCase) create(ctx context.Context, t *tally) string {
	obj, err := fromYAML(c.obj)
	if err != nil {
		t.check("dynamic: "+c.kind+": parse the object", false, "%v", err)
		return ""
	}
	made, err := c.res.Create(ctx, obj, metav1.CreateOptions{})
	ok := err == nil && made.GetName() == obj.GetName() && made.GetUID() != "" &&
		made.GetResourceVersion() != ""
	t.check("dynamic: create a "+c.kind, ok, "%s %v", describe(err), made)
	if !ok {
		return ""
	}
	return made.GetName()
}

// exercise: get, list by label, merge patch, update and delete of the object create made.
func (c volcanoCase) exercise(ctx context.Context, t *tally, name string) {
	obj, _ := fromYAML(c.obj)
	label := obj.GetLabels()["muster-test"]
	initial, _, _ := unstructured.NestedInt64(obj.Object, c.field...)
	path := ".spec." + strings.Join(c.field[1:], ".")

	got, err := c.res.Get(ctx, name, metav1.GetOptions{})
	value, _, _ := unstructured.NestedInt64(orEmpty(got), c.field...)
	t.check("dynamic: get the "+c.kind, err == nil && value == initial, "%s, %s = %d",
		describe(err), path, value)

	list, err := c.res.List(ctx, metav1.ListOptions{LabelSelector: "muster-test=" + label})
	var listed []string
	if err == nil {
		for _, item := range list.Items {
			listed = append(listed, item.GetName())
		}
	}
	t.check("dynamic: list "+c.kind+"s by label", err == nil && len(listed) == 1 &&
		listed[0] == name && list.GetResourceVersion() != "", "%s, items %v", describe(err), listed)

	patched, err := c.res.Patch(ctx, name, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"team":"ml"}}}`), metav1.PatchOptions{})
	t.check("dynamic: merge-patch the "+c.kind+"'s labels", err == nil &&
		patched.GetLabels()["team"] == "ml" && patched.GetLabels()["muster-test"] == label,
		"%s, labels %v", describe(err), orEmpty(patched)["metadata"])
	if err != nil {
		patched = got
	}

	if patched != nil {
		// Volcano's controllers (muster's scheduler here) write a PodGroup's status as it
		// changes, so an update from a copy read earlier may be stale: client-go's
		// RetryOnConflict reads it again, as a controller does.
		current := patched
		var updated *unstructured.Unstructured
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			changed := current.DeepCopy()
			_ = unstructured.SetNestedField(changed.Object, c.updated, c.field...)
			var updateErr error
			updated, updateErr = c.res.Update(ctx, changed, metav1.UpdateOptions{})
			if apierrors.IsConflict(updateErr) {
				if fresh, getErr := c.res.Get(ctx, name, metav1.GetOptions{}); getErr == nil {
					current = fresh
				}
			}
			return updateErr
		})
		value, _, _ = unstructured.NestedInt64(orEmpty(updated), c.field...)
		t.check(fmt.Sprintf("dynamic: update the %s (%s %d -> %d)", c.kind, path, initial, c.updated),
			err == nil && value == c.updated &&
				updated.GetResourceVersion() != patched.GetResourceVersion(),
			"%s, %s = %d", describe(err), path, value)
		reread, err := c.res.Get(ctx, name, metav1.GetOptions{})
		value, _, _ = unstructured.NestedInt64(orEmpty(reread), c.field...)
		t.check("dynamic: get the updated "+c.kind, err == nil && value == c.updated &&
			reread.GetLabels()["team"] == "ml", "%s, %s = %d, labels %v", describe(err), path,
			value, reread.GetLabels())
	}

	err = c.res.Delete(ctx, name, metav1.DeleteOptions{})
	t.check("dynamic: delete the "+c.kind, err == nil, "%s", describe(err))
	var last error
	gone := eventually(15*time.Second, func() bool {
		_, last = c.res.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(last)
	})
	t.check("dynamic: the deleted "+c.kind+" is NotFound", gone, "%s", describe(last))
}

func orEmpty(u *unstructured.Unstructured) map[string]any {
	if u == nil {
		return map[string]any{}
	}
	return u.Object
}

// podGroupWatch collects the events of a dynamic watch on the podgroups labelled
// muster-test=dynamic-podgroup until the watch ends.
type podGroupWatch struct {
	mu     sync.Mutex
	events []string // "TYPE name team=<label> minMember=<n>"
	done   chan struct{}
}

func (w *podGroupWatch) snapshot() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.events...)
}

func (w *podGroupWatch) run(wi watch.Interface) {
	defer close(w.done)
	for ev := range wi.ResultChan() {
		line := string(ev.Type)
		if u, ok := ev.Object.(*unstructured.Unstructured); ok {
			minMember, _, _ := unstructured.NestedInt64(u.Object, "spec", "minMember")
			line += fmt.Sprintf(" %s team=%s minMember=%d", u.GetName(), u.GetLabels()["team"],
				minMember)
		}
		w.mu.Lock()
		w.events = append(w.events, line)
		w.mu.Unlock()
		if ev.Type == watch.Deleted || ev.Type == watch.Error {
			// Nothing after this is the server's: once stopped, client-go's StreamWatcher may
			// report its own closed stream as an ERROR event (its receive loop selects between
			// the result channel and done at random), which a slow run (ASan) showed.
			wi.Stop()
			return
		}
	}
}

// testDynamic: the dynamic client on Volcano's Queues, PodGroups and Jobs, and a watch on the
// PodGroups.
func testDynamic(ctx context.Context, e *env) {
	t := e.t
	dyn, err := dynamic.NewForConfig(e.config)
	if err != nil {
		t.check("dynamic: a dynamic client", false, "%v", err)
		return
	}
	queue := volcanoCase{"Queue", dyn.Resource(queuesResource), dynQueue,
		[]string{"spec", "weight"}, 3}
	podGroup := volcanoCase{"PodGroup", dyn.Resource(podGroupsResource).Namespace("default"),
		dynPodGroup, []string{"spec", "minMember"}, 2}
	job := volcanoCase{"Job", dyn.Resource(jobsResource).Namespace("default"), dynJob,
		[]string{"spec", "minAvailable"}, 1}

	// The Job and the PodGroup name the queue, which must exist when they are created.
	queueName := queue.create(ctx, t)
	if queueName == "" {
		return
	}

	selector := metav1.ListOptions{LabelSelector: "muster-test=dynamic-podgroup"}
	var watcher *podGroupWatch
	list, err := podGroup.res.List(ctx, selector)
	if err == nil {
		selector.ResourceVersion = list.GetResourceVersion()
		var wi watch.Interface
		wi, err = podGroup.res.Watch(ctx, selector)
		if err == nil {
			watcher = &podGroupWatch{done: make(chan struct{})}
			go watcher.run(wi)
		}
	}
	t.check("dynamic: watch PodGroups from a list's resourceVersion", err == nil, "%s",
		describe(err))

	for _, c := range []volcanoCase{podGroup, job} {
		if name := c.create(ctx, t); name != "" {
			c.exercise(ctx, t, name)
		}
	}
	queue.exercise(ctx, t, queueName)

	if watcher != nil {
		select {
		case <-watcher.done:
		case <-time.After(10 * time.Second):
		}
		events := watcher.snapshot()
		want := []string{"ADDED dyn-pg team= minMember=1", "MODIFIED dyn-pg team=ml minMember=1",
			"MODIFIED dyn-pg team=ml minMember=2"}
		seen := 0
		for _, ev := range events {
			if seen < len(want) && ev == want[seen] {
				seen++
			}
		}
		t.check("dynamic: the watch saw the PodGroup ADDED, MODIFIED by the patch and by the update",
			seen == len(want) && len(events) > 0 && events[0] == want[0], "%q", events)
		t.check("dynamic: the watch saw the PodGroup DELETED, last", len(events) > 0 &&
			strings.HasPrefix(events[len(events)-1], "DELETED dyn-pg "), "%q", events)
	}
}
