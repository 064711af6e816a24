// apiload: the API servers workload of the peer benchmark (bench/peers/apiservers.sh). One run
// drives one API server, muster's or kube-apiserver's, through client-go with the kubeconfig it is
// given, and prints one "result NAME VALUE UNIT" line per figure (and "info" lines besides):
//
//	create-1conn  pods created back to back over one keep-alive connection (creates/s)
//	create-8conn  the same over -conns connections, one worker each, requests back to back
//	rss           the summed VmRSS of the server's processes (-pids, from /proc) once -rss-pods
//	              pods are stored
//	list-json     GET of the -list-pods pods of one namespace as a PodList (median ms of -list-reps)
//	list-table    the same with Accept: application/json;as=Table;v=v1;g=meta.k8s.io
//	watch         -watchers watches of one namespace, then -watch-writes creates on one connection:
//	              events delivered per second from the first create to the last watcher having the
//	              last event
//
// The run fails (exit 1) when a request fails, a list holds another count than it should, or a
// watcher misses an event or gets one out of order. A worker whose connection the server closed
// dials again (client-go's transport does), and an info line says how many were dialed.
//
// Every connection speaks HTTP/1.1 (muster serves no HTTP/2, and over HTTP/2 kube-apiserver would
// multiplex every worker onto one connection) and JSON, and each worker has a transport of its
// own, so that N workers are N connections.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	listNamespace  = "apiload-list"
	fillNamespace  = "apiload-fill"
	watchNamespace = "apiload-watch"
	tableAccept    = "application/json;as=Table;v=v1;g=meta.k8s.io"
)

type options struct {
	kubeconfig   string
	pids         string
	creates1     int
	creates8     int
	conns        int
	listPods     int
	listReps     int
	rssPods      int
	rssSettle    time.Duration
	watchers     int
	watchWrites  int
	watchTimeout time.Duration
	noGzip       bool
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "the server's kubeconfig (required)")
	flag.StringVar(&o.pids, "pids", "", "comma-separated pids whose VmRSS is the server's (required)")
	flag.IntVar(&o.creates1, "creates1", 3000, "pods created over one connection")
	flag.IntVar(&o.creates8, "creates8", 6000, "pods created over -conns connections")
	flag.IntVar(&o.conns, "conns", 8, "connections of the parallel create phase and of the fills")
	flag.IntVar(&o.listPods, "list-pods", 10000, "pods in the listed namespace")
	flag.IntVar(&o.listReps, "list-reps", 10, "timed lists of each kind")
	flag.IntVar(&o.rssPods, "rss-pods", 50000, "pods stored when RSS is read")
	flag.DurationVar(&o.rssSettle, "rss-settle", 5*time.Second, "idle time before RSS is read")
	flag.IntVar(&o.watchers, "watchers", 1000, "concurrent watches")
	flag.IntVar(&o.watchWrites, "watch-writes", 1000, "creates each watcher must see")
	flag.DurationVar(&o.watchTimeout, "watch-timeout", 5*time.Minute, "how long the watchers get")
	flag.BoolVar(&o.noGzip, "no-gzip", false, "do not ask for gzip (client-go asks by default)")
	flag.Parse()
	if err := validate(o); err != nil {
		fmt.Fprintln(os.Stderr, "apiload:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "apiload: FAIL:", err)
		os.Exit(1)
	}
}

func validate(o options) error {
	switch {
	case o.kubeconfig == "" || o.pids == "":
		return errors.New("-kubeconfig and -pids are required")
	case o.creates1 < 1 || o.creates8 < 1 || o.conns < 1 || o.listReps < 1:
		return errors.New("-creates1, -creates8, -conns and -list-reps must be positive")
	case o.creates1+o.creates8 > o.listPods:
		return errors.New("-creates1 + -creates8 must not exceed -list-pods (they are its first pods)")
	case o.rssPods < o.listPods:
		return errors.New("-rss-pods must be at least -list-pods (the listed pods count)")
	case o.watchers < 1 || o.watchWrites < 1:
		return errors.New("-watchers and -watch-writes must be positive")
	}
	return nil
}

func result(name string, value float64, unit string) {
	fmt.Printf("result %s %s %s\n", name, strconv.FormatFloat(value, 'f', -1, 64), unit)
}

func info(format string, args ...any) { fmt.Printf("info "+format+"\n", args...) }

func run(ctx context.Context, o options) error {
	base, err := baseConfig(o)
	if err != nil {
		return err
	}
	admin, err := newConn(base)
	if err != nil {
		return err
	}
	version, err := admin.client.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("the server's version: %w", err)
	}
	info("server %s", version.GitVersion)
	for _, ns := range []string{listNamespace, fillNamespace, watchNamespace} {
		if err := ensureNamespace(ctx, admin, ns); err != nil {
			return err
		}
	}

	cpu, err := cpuOf(o.pids)
	if err != nil {
		return err
	}
	rate, err := createPods(ctx, base, listNamespace, "c1-", o.creates1, 1)
	if err != nil {
		return fmt.Errorf("create-1conn: %w", err)
	}
	result("create-1conn", rate, "creates/s")
	serverCPU(o.pids, "create-1conn", cpu, o.creates1, "create")
	cpu, _ = cpuOf(o.pids)
	rate, err = createPods(ctx, base, listNamespace, "c8-", o.creates8, o.conns)
	if err != nil {
		return fmt.Errorf("create-8conn: %w", err)
	}
	result("create-8conn", rate, "creates/s")
	serverCPU(o.pids, "create-8conn", cpu, o.creates8, "create")

	// The list's namespace to -list-pods pods, another to -rss-pods in all, then the RSS.
	fills := []struct {
		ns, prefix string
		count      int
	}{
		{listNamespace, "l-", o.listPods - o.creates1 - o.creates8},
		{fillNamespace, "f-", o.rssPods - o.listPods},
	}
	for _, f := range fills {
		if f.count == 0 {
			continue
		}
		rate, err = createPods(ctx, base, f.ns, f.prefix, f.count, o.conns)
		if err != nil {
			return fmt.Errorf("filling %s: %w", f.ns, err)
		}
		info("fill %d pods into %s at %.0f creates/s over %d connections", f.count, f.ns, rate, o.conns)
	}
	time.Sleep(o.rssSettle)
	rss, hwm, each, err := memoryOf(o.pids)
	if err != nil {
		return err
	}
	result("rss", rss, "MiB")
	info("rss %s; peak %.0f MiB (VmHWM summed)", strings.Join(each, ", "), hwm)

	if err := measureList(ctx, admin, "list-json", "", o); err != nil {
		return err
	}
	if err := measureList(ctx, admin, "list-table", tableAccept, o); err != nil {
		return err
	}
	return measureWatch(ctx, base, o)
}

// baseConfig: the kubeconfig's server and credentials, without client-go's client-side rate limit,
// HTTP/1.1 and JSON only.
func baseConfig(o options) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1 // no client-side limiter: the server is what is measured
	cfg.TLSClientConfig.NextProtos = []string{"http/1.1"}
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	cfg.DisableCompression = o.noGzip
	cfg.UserAgent = "muster-apiload"
	cfg.Timeout = 0
	return cfg, nil
}

// conn is a client with a transport of its own, so that one worker using it sequentially holds one
// keep-alive connection; dials counts the connections it opened.
type conn struct {
	client *kubernetes.Clientset
	dials  atomic.Int32
}

func newConn(base *rest.Config) (*conn, error) {
	c := &conn{}
	cfg := rest.CopyConfig(base)
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c.dials.Add(1)
		return dialer.DialContext(ctx, network, addr)
	}
	// A Proxy function makes client-go's transport cache pass this config by: a new transport.
	cfg.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c.client = client
	return c, nil
}

// ensureNamespace creates the namespace and its default ServiceAccount (kube-apiserver's
// ServiceAccount admission refuses pods without it, and no controller may have made it yet).
func ensureNamespace(ctx context.Context, c *conn, ns string) error {
	_, err := c.client.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	_, err = c.client.CoreV1().ServiceAccounts(ns).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("serviceaccount %s/default: %w", ns, err)
	}
	return nil
}

// workerPod is a training job's worker as submitted (the pod of bench/apiserver_benchmark.cc):
// labels, one container with a command, requests and limits.
func workerPod(name string, i int) *corev1.Pod {
	q := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("100m"),
		corev1.ResourceMemory: resource.MustParse("500Mi"),
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{"app": "bench", "shard": "s" + strconv.Itoa(i%16)},
		},
		Spec: corev1.PodSpec{
			SchedulerName: "volcano",
			Containers: []corev1.Container{{
				Name:      "main",
				Image:     "registry.example.com/train:1.0",
				Command:   []string{"python", "train.py"},
				Resources: corev1.ResourceRequirements{Requests: q, Limits: q},
			}},
		},
	}
}

func podName(prefix string, i int) string { return fmt.Sprintf("%s%06d", prefix, i) }

// createPods creates pods prefix000000 .. prefix(count-1) in ns with `workers` workers, each
// on its own connection (opened before the clock starts), taking the next index as it finishes
// one; it returns creates per second.
func createPods(ctx context.Context, base *rest.Config, ns, prefix string, count, workers int) (float64, error) {
	if count <= 0 {
		return 0, nil
	}
	conns := make([]*conn, workers)
	for w := range conns {
		c, err := newConn(base)
		if err != nil {
			return 0, err
		}
		if _, err := c.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			return 0, err
		}
		conns[w] = c
	}
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pods := c.client.CoreV1().Pods(ns)
			for {
				i := int(next.Add(1)) - 1
				if i >= count {
					return
				}
				if _, err := pods.Create(ctx, workerPod(podName(prefix, i), i), metav1.CreateOptions{}); err != nil {
					errs[w] = err
					next.Store(int64(count)) // stop the others
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	dials := 0
	for _, c := range conns {
		dials += int(c.dials.Load())
	}
	if dials != workers {
		// The server closed a kept-alive connection (kube-apiserver did so once at load average
		// 18); client-go's transport dialed again and the create went through.
		info("%d creates into %s: %d connections dialed for %d workers", count, ns, dials, workers)
	}
	return float64(count) / elapsed.Seconds(), nil
}

// cpuOf sums the CPU time (utime + stime, seconds) of the comma-separated pids.
func cpuOf(pids string) (float64, error) {
	const ticksPerSecond = 100 // USER_HZ on Linux
	total := 0.0
	for _, pid := range strings.Split(pids, ",") {
		stat, err := os.ReadFile("/proc/" + strings.TrimSpace(pid) + "/stat")
		if err != nil {
			return 0, fmt.Errorf("the server's CPU time: %w", err)
		}
		// Fields after the command's closing parenthesis: state is the 3rd, utime the 14th.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 13 {
			return 0, fmt.Errorf("the server's CPU time: /proc/%s/stat is short", pid)
		}
		for _, f := range fields[11:13] {
			ticks, _ := strconv.ParseFloat(f, 64)
			total += ticks / ticksPerSecond
		}
	}
	return total, nil
}

// serverCPU prints the server's CPU time per operation since `since` (from cpuOf).
func serverCPU(pids, what string, since float64, ops int, per string) {
	now, err := cpuOf(pids)
	if err != nil || ops == 0 {
		return
	}
	info("%s server CPU %.0f us per %s (%.2f s for %d)", what, (now-since)*1e6/float64(ops), per,
		now-since, ops)
}

// memoryOf sums VmRSS and VmHWM (MiB) over the comma-separated pids; each is the command's name
// and its VmRSS.
func memoryOf(pids string) (rss, hwm float64, each []string, err error) {
	for _, pid := range strings.Split(pids, ",") {
		pidRSS := 0.0
		status, err := os.ReadFile("/proc/" + strings.TrimSpace(pid) + "/status")
		if err != nil {
			return 0, 0, nil, fmt.Errorf("the server's memory: %w", err)
		}
		name := "?"
		for _, line := range strings.Split(string(status), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 2 {
				continue
			}
			kib, _ := strconv.ParseFloat(fields[1], 64)
			switch fields[0] {
			case "Name:":
				name = fields[1]
			case "VmRSS:":
				rss += kib / 1024
				pidRSS = kib / 1024
			case "VmHWM:":
				hwm += kib / 1024
			}
		}
		each = append(each, fmt.Sprintf("%s %.0f MiB", name, pidRSS))
	}
	return rss, hwm, each, nil
}

// measureList lists the list namespace once untimed (checking its count: items of a PodList, rows
// of a Table), then -list-reps times; it reports the median.
func measureList(ctx context.Context, c *conn, name, accept string, o options) error {
	get := func() (time.Duration, []byte, error) {
		req := c.client.CoreV1().RESTClient().Get().Namespace(listNamespace).Resource("pods")
		if accept != "" {
			req = req.SetHeader("Accept", accept)
		}
		start := time.Now()
		body, err := req.DoRaw(ctx)
		return time.Since(start), body, err
	}
	cpu, err := cpuOf(o.pids)
	if err != nil {
		return err
	}
	_, body, err := get()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var list struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
		Rows  []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("%s: the response does not parse: %w", name, err)
	}
	wantKind, got := "PodList", len(list.Items)
	if accept != "" {
		wantKind, got = "Table", len(list.Rows)
	}
	if list.Kind != wantKind || got != o.listPods {
		return fmt.Errorf("%s: a %s of %d, want a %s of %d", name, list.Kind, got, wantKind, o.listPods)
	}
	times := make([]float64, o.listReps)
	for i := range times {
		d, _, err := get()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		times[i] = float64(d.Microseconds()) / 1000
	}
	serverCPU(o.pids, name, cpu, o.listReps+1, "list")
	sort.Float64s(times)
	result(name, times[len(times)/2], "ms")
	info("%s %d bytes (as read, after any gzip), fastest %.1f ms, slowest %.1f ms of %d", name,
		len(body), times[0], times[len(times)-1], len(times))
	return nil
}

// watcher reads one watch stream: every event must be the ADDED of the next pod written.
type watcher struct {
	got      int
	done     time.Time // when it had the last event
	err      error
	reported bool // finished has been called: it had every event, or it failed
}

// jsonString returns the string value that follows key (`"name":"`) in b, or nil.
func jsonString(b []byte, key string) []byte {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return nil
	}
	b = b[i+len(key):]
	if j := bytes.IndexByte(b, '"'); j >= 0 {
		return b[:j]
	}
	return nil
}

// read checks each event by its type and its object's metadata.name without decoding the object
// (on two cores a full decode of 10^6 events would be a large part of what is timed).
func (w *watcher) read(stream io.Reader, names [][]byte, finished func()) {
	report := func() {
		if !w.reported {
			w.reported = true
			finished()
		}
	}
	scanner := bufio.NewScanner(stream)
	scanner.Buffer(make([]byte, 64<<10), 16<<20)
	for scanner.Scan() {
		line := scanner.Bytes()
		typ := jsonString(line, `"type":"`)
		meta := bytes.Index(line, []byte(`"metadata":{`))
		var name []byte
		if meta >= 0 {
			name = jsonString(line[meta:], `"name":"`)
		}
		switch {
		case string(typ) != "ADDED":
			w.err = fmt.Errorf("event %d: %.300s", w.got, line)
		case w.got >= len(names):
			w.err = fmt.Errorf("an event past the %d written: %.300s", len(names), line)
		case !bytes.Equal(name, names[w.got]):
			w.err = fmt.Errorf("event %d is pod %q, want %q", w.got, name, names[w.got])
		}
		if w.err != nil {
			report()
			return
		}
		w.got++
		if w.got == len(names) {
			w.done = time.Now()
			report()
		}
	}
	if w.got < len(names) {
		w.err = fmt.Errorf("the stream ended after %d events: %v", w.got, scanner.Err())
		report()
	}
}

// measureWatch opens -watchers watches of the watch namespace from its current resourceVersion,
// then creates -watch-writes pods there on one connection, and waits for every watcher to have
// every one.
func measureWatch(ctx context.Context, base *rest.Config, o options) error {
	writer, err := newConn(base)
	if err != nil {
		return err
	}
	list, err := writer.client.CoreV1().Pods(watchNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("watch: the list to start from: %w", err)
	}
	cpu, err := cpuOf(o.pids)
	if err != nil {
		return err
	}
	names := make([][]byte, o.watchWrites)
	for i := range names {
		names[i] = []byte(podName("w-", i))
	}
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchers := make([]watcher, o.watchers)
	streams := make([]io.ReadCloser, o.watchers)
	openStart := time.Now()
	var open sync.WaitGroup
	openErrs := make([]error, o.watchers)
	var nextOpen atomic.Int64
	for range 16 {
		open.Add(1)
		go func() {
			defer open.Done()
			for {
				i := int(nextOpen.Add(1)) - 1
				if i >= o.watchers {
					return
				}
				c, err := newConn(base)
				if err == nil {
					streams[i], err = c.client.CoreV1().RESTClient().Get().Namespace(watchNamespace).
						Resource("pods").Param("watch", "true").
						Param("resourceVersion", list.ResourceVersion).Stream(streamCtx)
				}
				openErrs[i] = err
			}
		}()
	}
	open.Wait()
	if err := errors.Join(openErrs...); err != nil {
		return fmt.Errorf("watch: opening the watches: %w", err)
	}
	info("watch-open %d watches in %.2f s", o.watchers, time.Since(openStart).Seconds())

	var pending atomic.Int64
	pending.Store(int64(o.watchers))
	allDone := make(chan struct{})
	finished := func() {
		if pending.Add(-1) == 0 {
			close(allDone)
		}
	}
	var reading sync.WaitGroup
	for i := range watchers {
		reading.Add(1)
		go func() {
			defer reading.Done()
			watchers[i].read(streams[i], names, finished)
		}()
	}

	start := time.Now()
	pods := writer.client.CoreV1().Pods(watchNamespace)
	for i := range names {
		if _, err := pods.Create(ctx, workerPod(string(names[i]), i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("watch: create %d: %w", i, err)
		}
	}
	lastAck := time.Now()
	select {
	case <-allDone:
	case <-time.After(o.watchTimeout):
	}
	cancel()
	for _, s := range streams {
		s.Close()
	}
	reading.Wait()

	complete, last := 0, start
	var firstErr error
	for i := range watchers {
		w := &watchers[i]
		if w.err == nil && w.got == o.watchWrites && !w.done.IsZero() {
			complete++
			if w.done.After(last) {
				last = w.done
			}
		} else if firstErr == nil {
			firstErr = fmt.Errorf("watcher %d has %d of %d events: %v", i, w.got, o.watchWrites, w.err)
		}
	}
	info("watch-complete %d/%d watchers have all %d events, in order", complete, o.watchers, o.watchWrites)
	if firstErr != nil {
		return fmt.Errorf("watch: %w", firstErr)
	}
	if d := writer.dials.Load(); d != 1 {
		info("watch: the writer dialed %d connections, not one", d)
	}
	events := float64(o.watchers) * float64(o.watchWrites)
	result("watch", events/last.Sub(start).Seconds(), "events/s")
	serverCPU(o.pids, "watch", cpu, o.watchers*o.watchWrites, "event delivered (opening the watches and the creates included)")
	info("watch-writer %.0f creates/s while fanning out; the last watcher had the last event %.1f ms after its create returned",
		float64(o.watchWrites)/lastAck.Sub(start).Seconds(), float64(last.Sub(lastAck).Microseconds())/1000)
	return nil
}
