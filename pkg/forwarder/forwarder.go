// Package forwarder watches a cluster for pods the scheduler cannot place,
// for nodes that turn Ready, and for Joist nodes that start deleting or
// lose their last pod, and puts Joist's events about them on the cluster's
// EventBridge bus, where rules route them to the provisioner, the binder
// and the reaper.
//
// Events are hints (see package events): the functions reconcile from the
// Kubernetes API, so the forwarder favours few, timely events over exact
// ones. It debounces bursts into one event, resends every pending pod on a
// resync so a lost event costs only latency, and never stops watching
// because EventBridge is failing.
//
// It is orchestration: client-go informers on one side, an EventBridge
// client (behind PutEventsAPI) on the other, and the decisions in outbox.
package forwarder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Options configures a Forwarder. Client, Cluster, Bus and Put are
// required; zero durations take the defaults below.
type Options struct {
	// Client reads pods and nodes (list and watch).
	Client kubernetes.Interface
	// Cluster is the EKS cluster name, carried in every event.
	Cluster string
	// Bus is the name or ARN of the cluster's EventBridge bus.
	Bus string
	// Put puts events on the bus.
	Put PutEventsAPI

	// Debounce is how long the forwarder waits after the latest change
	// before it sends: a Deployment scaled to 100 replicas becomes one
	// event, not 100. Default 300ms: short, because the pending queue's
	// batching window (1 s) is the real debounce, where Karpenter's 1 s
	// idle batch sits; both add to a pod's wait for its node.
	Debounce time.Duration
	// MaxWait bounds the debounce under constant churn: a change is sent
	// at most this long after it was seen. Default 5s.
	MaxWait time.Duration
	// Resync is how often every currently unschedulable pod is sent again,
	// whether or not it changed. Default 60s.
	Resync time.Duration
	// StartupLookback decides which nodes that are already Ready when the
	// forwarder starts get a node-ready event: those whose Ready condition
	// changed within it (they may have turned Ready while no forwarder ran).
	// Older Ready nodes are not news. Default 10m.
	StartupLookback time.Duration
	// RetryBackoff is the delay before an entry EventBridge refused is
	// tried again, doubled per attempt (capped at a minute). Default 1s.
	RetryBackoff time.Duration
	// MaxAttempts is how often an entry is tried before it is dropped (its
	// pods come back with the next resync). Default 5.
	MaxAttempts int

	// Clock is the forwarder's time; tests pass a fake. Default real time.
	Clock clock.Clock
	// Logger receives the forwarder's logs. Default JSON on stderr.
	Logger *slog.Logger
}

// Defaults for Options.
const (
	DefaultDebounce        = 300 * time.Millisecond
	DefaultMaxWait         = 5 * time.Second
	DefaultResync          = time.Minute
	DefaultStartupLookback = 10 * time.Minute
	DefaultRetryBackoff    = time.Second
	DefaultMaxAttempts     = 5
)

// shutdownFlushTimeout bounds the last flush when Run is cancelled: a
// rolling update should not lose the window it was about to send, nor hang
// on an unreachable EventBridge.
const shutdownFlushTimeout = 5 * time.Second

// Forwarder turns pod and node changes into events on the bus.
type Forwarder struct {
	opts  Options
	log   *slog.Logger
	clock clock.Clock
	kick  chan struct{}

	mu         sync.Mutex
	box        *outbox
	nextResync time.Time

	synced atomic.Bool
}

// New checks opts, fills in defaults and returns a Forwarder; Run starts it.
func New(opts Options) (*Forwarder, error) {
	switch {
	case opts.Client == nil:
		return nil, errors.New("forwarder: a Kubernetes client is required")
	case opts.Cluster == "":
		return nil, errors.New("forwarder: a cluster name is required")
	case opts.Bus == "":
		return nil, errors.New("forwarder: an event bus is required")
	case opts.Put == nil:
		return nil, errors.New("forwarder: an EventBridge client is required")
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	if opts.MaxWait < opts.Debounce {
		opts.MaxWait = opts.Debounce
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	if opts.StartupLookback <= 0 {
		opts.StartupLookback = DefaultStartupLookback
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = DefaultRetryBackoff
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	f := &Forwarder{
		opts:  opts,
		log:   opts.Logger.With(slog.String("cluster", opts.Cluster)),
		clock: opts.Clock,
		kick:  make(chan struct{}, 1),
		box:   newOutbox(opts),
	}
	f.nextResync = f.clock.Now().Add(opts.Resync)
	return f, nil
}

// Synced reports whether the pod and node caches have been filled once, so
// a readiness probe can tell a forwarder that watches from one still
// listing.
func (f *Forwarder) Synced() bool { return f.synced.Load() }

// Run watches until ctx is cancelled, then sends what it still holds and
// returns nil. It returns an error only if it cannot start watching.
func (f *Forwarder) Run(ctx context.Context) error {
	// Only unbound, not-yet-running pods can be unschedulable; the field
	// selector keeps the watch (and the cache) to those. A pod that gets
	// bound leaves the selection and arrives as a delete.
	podFactory := informers.NewSharedInformerFactoryWithOptions(f.opts.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = "spec.nodeName=,status.phase=" + string(corev1.PodPending)
		}),
		informers.WithTransform(slimPod))
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(f.opts.Client, 0,
		informers.WithTransform(slimNode))

	// Bound pods, each reduced to a boundPod (key, UID, node, whether it
	// needs the node): a Joist node whose last such pod goes is reported
	// emptied.
	boundFactory := informers.NewSharedInformerFactoryWithOptions(f.opts.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName!=" }),
		informers.WithTransform(slimBoundPod))

	pods := podFactory.Core().V1().Pods().Informer()
	bound := boundFactory.Core().V1().Pods().Informer()
	nodes := nodeFactory.Core().V1().Nodes().Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    f.onPod,
		UpdateFunc: func(_, obj any) { f.onPod(obj) },
		DeleteFunc: f.onPodDelete,
	}); err != nil {
		return fmt.Errorf("forwarder: watch pods: %w", err)
	}
	if _, err := bound.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    f.onBoundPod,
		UpdateFunc: func(_, obj any) { f.onBoundPod(obj) },
		DeleteFunc: f.onBoundPodDelete,
	}); err != nil {
		return fmt.Errorf("forwarder: watch bound pods: %w", err)
	}
	if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    f.onNode,
		UpdateFunc: func(_, obj any) { f.onNode(obj, false) },
		DeleteFunc: f.onNodeDelete,
	}); err != nil {
		return fmt.Errorf("forwarder: watch nodes: %w", err)
	}

	informerCtx, stopInformers := context.WithCancel(ctx)
	defer stopInformers()
	podFactory.Start(informerCtx.Done())
	boundFactory.Start(informerCtx.Done())
	nodeFactory.Start(informerCtx.Done())
	defer podFactory.Shutdown()
	defer boundFactory.Shutdown()
	defer nodeFactory.Shutdown()

	f.log.Info("forwarder starting", slog.String("bus", f.opts.Bus),
		slog.String("debounce", f.opts.Debounce.String()), slog.String("maxWait", f.opts.MaxWait.String()),
		slog.String("resync", f.opts.Resync.String()))
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, bound.HasSynced, nodes.HasSynced) {
		return nil // cancelled while listing
	}
	f.synced.Store(true)
	f.log.Info("caches synced")
	f.loop(ctx)
	return nil
}

func (f *Forwarder) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	f.mu.Lock()
	f.box.podChanged(pod, f.clock.Now())
	f.mu.Unlock()
	f.wake()
}

func (f *Forwarder) onPodDelete(obj any) {
	pod, ok := unwrap(obj).(*corev1.Pod)
	if !ok {
		return
	}
	f.mu.Lock()
	f.box.podGone(pod.UID)
	f.mu.Unlock()
	f.wake()
}

func (f *Forwarder) onBoundPod(obj any) {
	pod, ok := obj.(*boundPod)
	if !ok {
		return
	}
	f.mu.Lock()
	f.box.boundPodChanged(pod, f.clock.Now())
	f.mu.Unlock()
	f.wake()
}

func (f *Forwarder) onBoundPodDelete(obj any) {
	pod, ok := unwrap(obj).(*boundPod)
	if !ok {
		return
	}
	f.mu.Lock()
	f.box.boundPodGone(pod.UID, f.clock.Now())
	f.mu.Unlock()
	f.wake()
}

func (f *Forwarder) onNode(obj any, initial bool) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	f.mu.Lock()
	f.box.nodeChanged(node, initial, f.clock.Now())
	f.mu.Unlock()
	f.wake()
}

func (f *Forwarder) onNodeDelete(obj any) {
	node, ok := unwrap(obj).(*corev1.Node)
	if !ok {
		return
	}
	f.mu.Lock()
	f.box.nodeGone(node.Name)
	f.mu.Unlock()
	f.wake()
}

// wake tells the loop that the outbox changed, so it re-plans its timer.
func (f *Forwarder) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// loop sends what is due, then sleeps until the next thing is due or the
// outbox changes.
func (f *Forwarder) loop(ctx context.Context) {
	for {
		next := f.step(ctx, false)
		timer := f.clock.NewTimer(next.Sub(f.clock.Now()))
		select {
		case <-ctx.Done():
			timer.Stop()
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownFlushTimeout)
			f.step(flushCtx, true)
			cancel()
			f.log.Info("forwarder stopped")
			return
		case <-f.kick:
		case <-timer.C():
		}
		timer.Stop()
	}
}

// step does what is due now: the resync if its time has come, then every
// entry whose debounce or backoff has run out, in as few PutEvents calls as
// the limits allow. With force (shutdown), everything waiting goes out and
// nothing is retried. It returns when the next thing is due.
func (f *Forwarder) step(ctx context.Context, force bool) time.Time {
	now := f.clock.Now()
	f.mu.Lock()
	if !now.Before(f.nextResync) {
		if n := f.box.resync(now); n > 0 {
			f.log.Info("resync", slog.Int("pods", n))
		}
		f.nextResync = now.Add(f.opts.Resync)
	}
	due, err := f.box.take(now, force)
	f.mu.Unlock()
	if err != nil {
		f.log.Error("cannot build events", slog.Any("error", err))
	}

	var failed []queued
	for _, batch := range calls(due) {
		failed = append(failed, f.put(ctx, batch)...)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	if len(failed) > 0 && !force {
		for _, q := range f.box.failed(failed, f.clock.Now()) {
			f.log.Error("dropping an event after repeated failures; the resync will resend its pods",
				slog.String("detailType", *q.entry.DetailType), slog.Int("attempts", q.attempts))
		}
	}
	next := f.nextResync
	if at := f.box.next(); !at.IsZero() && at.Before(next) {
		next = at
	}
	return next
}
