// Command go-client runs the official Go client, k8s.io/client-go, against `muster up` with the
// kubeconfig muster wrote, unchanged (HTTPS with its CA and a bearer token), the way controllers
// and operators written in Go drive a cluster:
//
//   - shared informers with a short resync see the seed's gang pods added, bound, resynced and
//     deleted, and their listers agree (informer.go);
//   - the dynamic client creates, reads, lists, patches, updates, watches and deletes Volcano's
//     Jobs, Queues and PodGroups (dynamic.go);
//   - typed clients that send protobuf write and read ConfigMaps, Services and Leases
//     (protobuf.go);
//   - two candidates of tools/leaderelection on one Lease: one leads, the other takes over when
//     the leader releases (leader.go);
//   - server-side apply by two field managers: shared ownership, a conflict, a forced takeover
//     (apply.go).
//
// Prints one PASS or FAIL line per check and "N passed, M failed"; exits 1 when anything failed.
//
// Usage: go-client KUBECONFIG EXAMPLES_DIR     (EXAMPLES_DIR: examples/gpu-gang)
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// tally counts the checks; check prints each one's line.
type tally struct{ passed, failed int }

// check prints "PASS name", or "FAIL name" with what was seen instead, indented, below it.
func (t *tally) check(name string, ok bool, got string, args ...any) {
	if ok {
		t.passed++
		fmt.Printf("PASS %s\n", name)
		return
	}
	t.failed++
	fmt.Printf("FAIL %s\n", name)
	if got != "" {
		detail := fmt.Sprintf(got, args...)
		if len(detail) > 1200 {
			detail = detail[:1200] + "..."
		}
		fmt.Printf("    got: %s\n", strings.ReplaceAll(detail, "\n", "\n         "))
	}
}

// eventually polls cond every 50 ms until it holds (true) or `within` has passed (false).
func eventually(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cond()
}

// env is what every suite gets: the rest config from the kubeconfig and the seed's examples.
type env struct {
	t        *tally
	config   *rest.Config // as the kubeconfig has it; copy it before changing anything
	clients  *kubernetes.Clientset
	examples string
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go-client KUBECONFIG EXAMPLES_DIR")
		os.Exit(2)
	}
	t := &tally{}
	config, err := clientcmd.BuildConfigFromFlags("", os.Args[1])
	if err != nil {
		t.check("load the kubeconfig muster wrote", false, "%v", err)
		finish(t)
	}
	t.check("the kubeconfig names an https server with a CA and a bearer token",
		strings.HasPrefix(config.Host, "https://") &&
			(len(config.CAData) > 0 || config.CAFile != "") &&
			(config.BearerToken != "" || config.BearerTokenFile != ""),
		"host %q, CA file %q (%d bytes inline), token set: %v", config.Host, config.CAFile,
		len(config.CAData), config.BearerToken != "" || config.BearerTokenFile != "")
	clients, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.check("a clientset from the kubeconfig", false, "%v", err)
		finish(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	_, err = clients.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	cancel()
	t.check("get namespace default over TLS with the kubeconfig as written", err == nil, "%v", err)
	if err != nil {
		finish(t)
	}

	e := &env{t: t, config: config, clients: clients, examples: os.Args[2]}
	for _, suite := range []struct {
		name string
		run  func(context.Context, *env)
		time time.Duration
	}{
		{"informers", testInformers, 150 * time.Second},
		{"dynamic", testDynamic, 60 * time.Second},
		{"protobuf", testProtobuf, 60 * time.Second},
		{"leaderelection", testLeaderElection, 90 * time.Second},
		{"apply", testServerSideApply, 60 * time.Second},
	} {
		fmt.Printf("--- %s\n", suite.name)
		ctx, cancel := context.WithTimeout(context.Background(), suite.time)
		suite.run(ctx, e)
		cancel()
	}
	finish(t)
}

// describe is what the server answered for a failed call: the status code, reason, message and
// causes of its Status, or the client's error when no Status came.
func describe(err error) string {
	if err == nil {
		return "no error"
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		return err.Error()
	}
	s := status.Status()
	out := fmt.Sprintf("%d %s: %s", s.Code, s.Reason, s.Message)
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			out += fmt.Sprintf(" [cause %s %q field %q]", c.Type, c.Message, c.Field)
		}
	}
	return out
}

func finish(t *tally) {
	fmt.Printf("%d passed, %d failed\n", t.passed, t.failed)
	if t.failed > 0 {
		os.Exit(1)
	}
	os.Exit(0)
}
