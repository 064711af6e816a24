package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// informerResync is the factory's resync period: short, so that a resync comes within the test.
const informerResync = time.Second

// podEvent is one call of a handler: its verb ("add", "update", "delete"), the pod's node and the
// old and new objects' resourceVersions (old is "" for add and delete).
type podEvent struct {
	verb, node, oldRV, newRV string
}

func (e podEvent) String() string {
	return fmt.Sprintf("%s(node=%q rv %s->%s)", e.verb, e.node, e.oldRV, e.newRV)
}

// podRecorder keeps every handler call per pod name. Thread-safe.
type podRecorder struct {
	mu     sync.Mutex
	events map[string][]podEvent
}

func (r *podRecorder) record(name string, e podEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events[name] = append(r.events[name], e)
}

// of returns a copy of the calls for pod `name`.
func (r *podRecorder) of(name string) []podEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]podEvent(nil), r.events[name]...)
}

func (r *podRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.events))
	for n := range r.events {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s: %v\n", n, r.events[n])
	}
	return b.String()
}

func (r *podRecorder) handlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				r.record(pod.Name, podEvent{"add", pod.Spec.NodeName, "", pod.ResourceVersion})
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*corev1.Pod)
			pod, ok2 := newObj.(*corev1.Pod)
			if ok1 && ok2 {
				r.record(pod.Name, podEvent{"update", pod.Spec.NodeName, old.ResourceVersion,
					pod.ResourceVersion})
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				r.record(pod.Name, podEvent{"delete", pod.Spec.NodeName, "", pod.ResourceVersion})
			}
		},
	}
}

// boundAt is the first update that gave the pod a node, or -1.
func boundAt(events []podEvent) int {
	node := ""
	for i, e := range events {
		if e.verb == "update" && node == "" && e.node != "" {
			return i
		}
		if e.verb != "delete" {
			node = e.node
		}
	}
	return -1
}

// resyncs counts the updates whose old and new objects have the same resourceVersion.
func resyncs(events []podEvent) int {
	n := 0
	for _, e := range events {
		if e.verb == "update" && e.oldRV == e.newRV {
			n++
		}
	}
	return n
}

// testInformers: a SharedInformerFactory on the pods of namespace default, with a 1 s resync,
// while the seed's Queue and Volcano Job are created and the Job deleted again.
func testInformers(ctx context.Context, e *env) {
	t := e.t
	dyn, err := dynamic.NewForConfig(e.config)
	if err != nil {
		t.check("informers: a dynamic client", false, "%v", err)
		return
	}
	factory := informers.NewSharedInformerFactoryWithOptions(e.clients, informerResync,
		informers.WithNamespace("default"))
	pods := factory.Core().V1().Pods()
	rec := &podRecorder{events: map[string][]podEvent{}}
	if _, err := pods.Informer().AddEventHandler(rec.handlers()); err != nil {
		t.check("informers: add the event handlers", false, "%v", err)
		return
	}
	lister := pods.Lister()
	stop := make(chan struct{})
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	factory.Start(stop)
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	synced := factory.WaitForCacheSync(syncCtx.Done())
	cancel()
	allSynced := len(synced) == 1
	for _, ok := range synced {
		allSynced = allSynced && ok
	}
	t.check("informers: the pod informer syncs", allSynced, "%v", synced)
	if !allSynced {
		return
	}

	queue, err := loadExample(e.examples, "volcano-queue.yaml")
	if err != nil {
		t.check("informers: read the seed's Queue", false, "%v", err)
		return
	}
	job, err := loadExample(e.examples, "tensorflow-job.yaml")
	if err != nil {
		t.check("informers: read the seed's Job", false, "%v", err)
		return
	}
	_, err = dyn.Resource(queuesResource).Create(ctx, queue, metav1.CreateOptions{})
	t.check("informers: create the seed's Queue with the dynamic client", err == nil, "%s",
		describe(err))
	jobs := dyn.Resource(jobsResource).Namespace("default")
	_, err = jobs.Create(ctx, job, metav1.CreateOptions{})
	t.check("informers: create the seed's Volcano Job with the dynamic client", err == nil, "%s",
		describe(err))
	if err != nil {
		return
	}
	names := gangPodNames(job)
	selector := labels.SelectorFromSet(labels.Set{"volcano.sh/job-name": job.GetName()})

	allBound := eventually(60*time.Second, func() bool {
		for _, n := range names {
			if boundAt(rec.of(n)) < 0 {
				return false
			}
		}
		return true
	})
	t.check(fmt.Sprintf("informers: handlers saw all %d pods of the gang added and bound",
		len(names)), allBound, "%s", rec)
	for _, n := range names {
		events := rec.of(n)
		t.check("informers: "+n+": the first call is AddFunc",
			len(events) > 0 && events[0].verb == "add", "%v", events)
		t.check("informers: "+n+": a later UpdateFunc carries spec.nodeName", boundAt(events) > 0,
			"%v", events)
		t.check("informers: "+n+": each UpdateFunc's old object is the one the handlers last saw",
			chained(events), "%v", events)
	}

	// At least two resyncs after the bind: resyncs come every period, not once.
	resynced := eventually(15*time.Second, func() bool {
		for _, n := range names {
			events := rec.of(n)
			if b := boundAt(events); b < 0 || resyncs(events[b:]) < 2 {
				return false
			}
		}
		return true
	})
	for _, n := range names {
		events := rec.of(n)
		after := []podEvent{}
		if b := boundAt(events); b >= 0 {
			after = events[b:]
		}
		t.check(fmt.Sprintf("informers: %s: resyncs every %v (UpdateFunc with old and new at one "+
			"resourceVersion)", n, informerResync), resynced && resyncs(after) >= 2, "%v", events)
	}

	agree := func() (bool, string) {
		listed, err := lister.Pods("default").List(selector)
		if err != nil || len(listed) != len(names) {
			return false, fmt.Sprintf("lister.List(%s): %d pods, %v", selector, len(listed), err)
		}
		for _, n := range names {
			cached, err := lister.Pods("default").Get(n)
			if err != nil {
				return false, fmt.Sprintf("lister.Get(%s): %v", n, err)
			}
			live, err := e.clients.CoreV1().Pods("default").Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Sprintf("get %s: %s", n, describe(err))
			}
			if cached.ResourceVersion != live.ResourceVersion || cached.Spec.NodeName == "" ||
				cached.Spec.NodeName != live.Spec.NodeName {
				return false, fmt.Sprintf("%s: lister rv %s node %q, server rv %s node %q", n,
					cached.ResourceVersion, cached.Spec.NodeName, live.ResourceVersion,
					live.Spec.NodeName)
			}
		}
		return true, ""
	}
	why := ""
	ok := eventually(10*time.Second, func() bool {
		var good bool
		good, why = agree()
		return good
	})
	t.check("informers: the lister holds the gang bound, at the server's resourceVersions", ok,
		"%s", why)

	err = jobs.Delete(ctx, job.GetName(), metav1.DeleteOptions{})
	t.check("informers: delete the Volcano Job with the dynamic client", err == nil, "%s",
		describe(err))
	allDeleted := eventually(60*time.Second, func() bool {
		for _, n := range names {
			events := rec.of(n)
			if len(events) == 0 || events[len(events)-1].verb != "delete" {
				return false
			}
		}
		return true
	})
	t.check("informers: DeleteFunc for every pod of the gang after the Job was deleted",
		allDeleted, "%s", rec)
	gone := eventually(5*time.Second, func() bool {
		listed, err := lister.Pods("default").List(selector)
		if err != nil || len(listed) != 0 {
			return false
		}
		for _, n := range names {
			if _, err := lister.Pods("default").Get(n); !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	})
	listed, _ := lister.Pods("default").List(selector)
	t.check("informers: the lister no longer holds them (Get is NotFound)", gone,
		"lister.List(%s): %d pods", selector, len(listed))
}

// chained: every update's old resourceVersion is the new one of the call before it, so that the
// handlers saw each state once and in order.
func chained(events []podEvent) bool {
	last := ""
	for i, e := range events {
		if e.verb == "update" && (i == 0 || e.oldRV != last) {
			return false
		}
		last = e.newRV
	}
	return true
}
