package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// The lease lasts far longer than a takeover may take: a takeover within takeoverWithin comes
// from the release, not from the lease running out.
const (
	leaseDuration  = 15 * time.Second
	renewDeadline  = 10 * time.Second
	retryPeriod    = 500 * time.Millisecond
	takeoverWithin = 5 * time.Second
	leaseName      = "go-client-leader"
)

// candidate is one LeaderElector with its own clientset, and what its callbacks said. The
// clientset is as kubernetes.NewForConfig makes it, and so sends the Lease as protobuf (client-go's
// typed clients do for built-in kinds unless the config names a ContentType).
type candidate struct {
	id      string
	elector *leaderelection.LeaderElector
	cancel  context.CancelFunc
	done    chan struct{}

	mu      sync.Mutex
	started time.Time // when OnStartedLeading came; zero until then
	stopped bool      // OnStoppedLeading came after OnStartedLeading
}

func (c *candidate) startedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started
}

func (c *candidate) stoppedLeading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

func newCandidate(config *rest.Config, id string) (*candidate, error) {
	clients, err := kubernetes.NewForConfig(rest.CopyConfig(config))
	if err != nil {
		return nil, err
	}
	c := &candidate{id: id, done: make(chan struct{})}
	c.elector, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: leaseName, Namespace: "default"},
			Client:     clients.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration:   leaseDuration,
		RenewDeadline:   renewDeadline,
		RetryPeriod:     retryPeriod,
		ReleaseOnCancel: true,
		Name:            leaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				c.mu.Lock()
				c.started = time.Now()
				c.mu.Unlock()
			},
			OnStoppedLeading: func() {
				c.mu.Lock()
				c.stopped = !c.started.IsZero()
				c.mu.Unlock()
			},
		},
	})
	return c, err
}

func (c *candidate) run(ctx context.Context) {
	ctx, c.cancel = context.WithCancel(ctx)
	go func() {
		defer close(c.done)
		c.elector.Run(ctx)
	}()
}

// testLeaderElection: two candidates (two clientsets, one process) on one Lease.
func testLeaderElection(ctx context.Context, e *env) {
	t := e.t
	a, errA := newCandidate(e.config, "candidate-a")
	b, errB := newCandidate(e.config, "candidate-b")
	if errA != nil || errB != nil {
		t.check("leaderelection: two LeaderElectors on a LeaseLock", false, "%v %v", errA, errB)
		return
	}
	candidates := []*candidate{a, b}
	for _, c := range candidates {
		c.run(ctx)
	}
	defer func() {
		for _, c := range candidates {
			c.cancel()
			<-c.done
		}
	}()

	leaders := func() []string {
		var ids []string
		for _, c := range candidates {
			if c.elector.IsLeader() {
				ids = append(ids, c.id)
			}
		}
		return ids
	}
	elected := eventually(15*time.Second, func() bool { return len(leaders()) > 0 })
	// Several retry periods with both candidates trying: never two leaders, always one.
	var seen [][]string
	exactlyOne := true
	for i := 0; elected && i < 20; i++ {
		now := leaders()
		seen = append(seen, now)
		exactlyOne = exactlyOne && len(now) == 1
		time.Sleep(retryPeriod / 2)
	}
	if !elected {
		t.check("leaderelection: exactly one of two candidates leads", false,
			"no candidate led within 15s (client-go logged why above)")
		return
	}
	t.check("leaderelection: exactly one of two candidates leads", exactlyOne,
		"leaders over time %v", seen)
	if !exactlyOne {
		return
	}
	leader, follower := a, b
	if b.elector.IsLeader() {
		leader, follower = b, a
	}
	holder := func() string {
		lease, err := e.clients.CoordinationV1().Leases("default").Get(ctx, leaseName,
			metav1.GetOptions{})
		if err != nil {
			return "error: " + describe(err)
		}
		if lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}
	got := holder()
	t.check("leaderelection: the Lease's holderIdentity is the leader", got == leader.id,
		"holderIdentity %q, leader %s", got, leader.id)
	t.check("leaderelection: OnStartedLeading came for the leader only",
		!leader.startedAt().IsZero() && follower.startedAt().IsZero(), "%s at %v, %s at %v",
		leader.id, leader.startedAt(), follower.id, follower.startedAt())

	cancelled := time.Now()
	leader.cancel()
	<-leader.done
	t.check("leaderelection: OnStoppedLeading came once the leader's context was cancelled",
		leader.stoppedLeading() && !leader.elector.IsLeader(), "stopped %v, still leader %v",
		leader.stoppedLeading(), leader.elector.IsLeader())
	tookOver := eventually(takeoverWithin, func() bool { return follower.elector.IsLeader() })
	t.check(fmt.Sprintf("leaderelection: the other candidate takes over within %v of the release "+
		"(the lease lasts %v)", takeoverWithin, leaseDuration), tookOver,
		"%s leading: %v after %v", follower.id, follower.elector.IsLeader(),
		time.Since(cancelled).Round(time.Millisecond))
	if tookOver {
		fmt.Printf("    note: took over %v after the cancel\n",
			follower.startedAt().Sub(cancelled).Round(time.Millisecond))
	}
	var last string
	follows := eventually(5*time.Second, func() bool { last = holder(); return last == follower.id })
	t.check("leaderelection: the Lease's holderIdentity follows to the new leader", follows,
		"holderIdentity %q, new leader %s", last, follower.id)

	follower.cancel()
	<-follower.done
	last = holder()
	t.check("leaderelection: the last leader's release empties holderIdentity", last == "",
		"holderIdentity %q", last)
	err := e.clients.CoordinationV1().Leases("default").Delete(ctx, leaseName,
		metav1.DeleteOptions{})
	t.check("leaderelection: delete the Lease", err == nil, "%s", describe(err))
}
