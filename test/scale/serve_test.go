package scale

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// serveRead is one way of reading every bound pod that the serving
// floor measures (world.serve).
type serveRead struct {
	name string
	gzip bool
	// limit is the page size.
	limit int64
	// streams reads the namespaces' pods, each list paginated, this many
	// namespaces at once (0: one list over all namespaces).
	streams int
}

// serve reads every bound pod as the API server sends it, pages not
// decoded (the gzip'd ones not even gunzip'd, but for their first bytes,
// where the continue token is), and returns the wall time, the API
// server's CPU and the bytes read: what the API server alone costs a
// pass, the floor for its wall time whatever the client does. With
// profile, the API server's CPU profile of the read is written there.
func (w *world) serve(t testing.TB, r serveRead, profile string) (wall float64, api apiTotals, read int64) {
	t.Helper()
	ctx := context.Background()
	cfg := rest.CopyConfig(w.kube.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	cfg.DisableCompression = !r.gzip
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string // namespaces; "" is all of them
	if r.streams == 0 {
		parts = []string{""}
	} else {
		nss, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range nss.Items {
			parts = append(parts, ns.Name)
		}
	}
	var prof bytes.Buffer
	profDone := make(chan error, 1)
	if profile != "" {
		// The read starts once the profile request has been sent, so the
		// profile covers it.
		sent := make(chan struct{})
		var once sync.Once
		pctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(sent) }) },
		})
		go func() {
			b, err := w.admin.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "12").DoRaw(pctx)
			prof.Write(b)
			profDone <- err
		}()
		select {
		case <-sent:
		case err := <-profDone:
			t.Fatalf("profile request: %v", err)
		case <-time.After(time.Minute):
			t.Fatal("profile request not sent within a minute")
		}
	}
	before, err := apiServerTotals(ctx, w.admin)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var mu sync.Mutex
	var firstErr error
	work := make(chan string)
	var wg sync.WaitGroup
	for range max(1, r.streams) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ns := range work {
				n, err := readRawPods(ctx, c.CoreV1().RESTClient(), ns, r)
				mu.Lock()
				read += n
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	for _, p := range parts {
		work <- p
	}
	close(work)
	wg.Wait()
	wall = time.Since(start).Seconds()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	after, err := apiServerTotals(ctx, w.admin)
	if err != nil {
		t.Fatal(err)
	}
	if profile != "" {
		if err := <-profDone; err != nil {
			t.Logf("API server profile: %v", err)
		} else if err := os.WriteFile(filepath.Join(profile, "apiserver-"+r.name+".pprof"), prof.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return wall, after.minus(before), read
}

// readRawPods reads the bound pods of a namespace ("": all) page by page,
// as protobuf, and returns the bytes read.
func readRawPods(ctx context.Context, rc rest.Interface, ns string, r serveRead) (int64, error) {
	opts := metav1.ListOptions{FieldSelector: "spec.nodeName!=", Limit: r.limit}
	var total int64
	for {
		req := rc.Get().Resource("pods").VersionedParams(&opts, scheme.ParameterCodec).
			SetHeader("Accept", "application/vnd.kubernetes.protobuf")
		if ns != "" {
			req = req.Namespace(ns)
		}
		if r.gzip {
			// Asked for explicitly, the transport leaves the body gzip'd.
			req = req.SetHeader("Accept-Encoding", "gzip")
		}
		body, err := req.Stream(ctx)
		if err != nil {
			return total, err
		}
		var head bytes.Buffer
		n, err := io.Copy(&head, body)
		_ = body.Close()
		total += n
		if err != nil {
			return total, err
		}
		b := head.Bytes()
		if r.gzip && len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return total, err
			}
			first := make([]byte, 4096)
			m, _ := io.ReadFull(zr, first)
			b = first[:m]
		}
		cont, err := rawContinue(b)
		if err != nil {
			return total, err
		}
		if cont == "" {
			return total, nil
		}
		opts.Continue = cont
	}
}

// rawContinue finds the continue token in the first bytes of a protobuf
// list page (the list's metadata is encoded before its items).
func rawContinue(b []byte) (string, error) {
	if !bytes.HasPrefix(b, []byte("k8s\x00")) {
		return "", fmt.Errorf("not a protobuf page: %q", b[:min(len(b), 40)])
	}
	b = b[4:]
	// runtime.Unknown: raw (2) holds the list.
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			return "", fmt.Errorf("unexpected field %d", num)
		}
		l, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return "", protowire.ParseError(n)
		}
		b = b[n:]
		if num != 2 {
			b = b[l:]
			continue
		}
		// The list: metadata (1) first.
		num, _, n = protowire.ConsumeTag(b)
		if n < 0 || num != 1 {
			return "", fmt.Errorf("list metadata not first")
		}
		meta, n := protowire.ConsumeBytes(b[n:])
		if n < 0 {
			return "", protowire.ParseError(n)
		}
		for len(meta) > 0 {
			num, typ, n := protowire.ConsumeTag(meta)
			if n < 0 {
				return "", protowire.ParseError(n)
			}
			meta = meta[n:]
			m := protowire.ConsumeFieldValue(num, typ, meta)
			if m < 0 {
				return "", protowire.ParseError(m)
			}
			if num == 3 {
				v, _ := protowire.ConsumeBytes(meta)
				return string(v), nil
			}
			meta = meta[m:]
		}
		return "", nil
	}
	return "", fmt.Errorf("no list in the envelope")
}
