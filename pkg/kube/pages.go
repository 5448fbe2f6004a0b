package kube

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// How a large pod read is split (eachPodWire). The API server's watch
// cache collects, for every page of a list, every object from the page's
// start to the end of the list before it takes the page's limit
// (PodPageSize), so a list of N pods in pages of L costs it about N²/2L
// object steps. A list per namespace walks only to the end of its
// namespace: k namespaces of N/k pods cost N²/2kL. And the namespaces'
// lists can be read at once, which puts more than one of the API server's
// cores to work (docs/scale.md: at 100,000 pods the serving floor goes
// from 12.0 s for one list to 4.7 s for one per namespace, four at once).
var (
	// namespaceLists is how many namespaces a read is split into at most;
	// past it (many small namespaces: each list is a request, with its
	// fixed cost) the read stays one list. 0: never split.
	namespaceLists = 64
	// namespaceStreams is how many namespaces' lists are read at once.
	// Each holds one page in flight (a buffer of a few MB): a read holds
	// at most namespaceStreams+1 pages. Two keep the client decoding while
	// the API server serves (on this machine's two cores, two did as well
	// as four, and four held two more buffers: docs/scale.md).
	namespaceStreams = 2
)

// eachPodWire lists pods page by page as protobuf and hands each one,
// reduced, to f.
//
// The first page is of a list over every namespace; a read that fits in
// it (most reads: the pending pods, a node's) is that one request. A
// larger one goes on namespace by namespace: the namespaces are listed,
// and those from the first page's last pod's on (in the order of the
// storage's keys, the order of the list) are each read in a list of their
// own, namespaceStreams at once. The pods of the first page in namespaces
// before that one are handed over; its pods of that namespace are left
// for its own list. Each namespace's list is a consistent read of its own
// revision, not one snapshot of the cluster: every pod is read once, as
// it was at some moment after the read began (docs/scale.md says why that
// is enough for each reader). With many namespaces (more than
// namespaceLists after the first page), or when they cannot be listed,
// the read goes on as one list.
func (c *Client) eachPodWire(ctx context.Context, rc rest.Interface, opts metav1.ListOptions, r *podReader, f func(*corev1.Pod)) error {
	p := newPager(ctx, rc, podListing, max(2, namespaceStreams+1))
	defer p.close()
	first := p.read(pageList{opts: opts})
	if first.err != nil {
		return first.err
	}
	var lists []pageList
	workers, skip := 1, ""
	if first.cont != "" {
		rest := opts
		rest.Continue = first.cont
		lists = []pageList{{opts: rest}}
		if first.list != nil && namespaceLists > 0 {
			last, err := lastNamespace(first.list)
			if err != nil {
				return err
			}
			if nss, ok := c.namespacesFrom(ctx, last); ok {
				lists, workers, skip = nil, max(1, namespaceStreams), last
				for _, ns := range nss {
					lists = append(lists, pageList{ns: ns, opts: opts})
				}
			}
		}
	}
	p.start(workers, lists)
	err := podPage(first.body, first.list, skip, r, f)
	p.release(first)
	if err != nil {
		return err
	}
	return p.each(func(pg fetched) error { return podPage(pg.body, pg.list, "", r, f) })
}

// namespacesFrom lists the namespaces whose pods come at or after those
// of namespace from in a list's order (the storage's keys,
// "<namespace>/<name>"), in that order; ok is false when they cannot be
// listed or are more than namespaceLists.
func (c *Client) namespacesFrom(ctx context.Context, from string) (nss []string, ok bool) {
	opts := metav1.ListOptions{Limit: PageSize}
	for {
		list, err := c.CoreV1().Namespaces().List(ctx, opts)
		if err != nil {
			return nil, false
		}
		for _, ns := range list.Items {
			if ns.Name+"/" >= from+"/" {
				nss = append(nss, ns.Name)
			}
		}
		if len(nss) > namespaceLists {
			return nil, false
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	sort.Slice(nss, func(i, j int) bool { return nss[i]+"/" < nss[j]+"/" })
	return nss, true
}

// eachPage reads a list page by page, in protobuf where the server
// speaks it, and hands each page to page (one list: the nodes).
func eachPage(ctx context.Context, rc rest.Interface, l listing, opts metav1.ListOptions, page func(fetched) error) error {
	p := newPager(ctx, rc, l, 2)
	defer p.close()
	p.start(1, []pageList{{opts: opts}})
	return p.each(page)
}

// pageList is one list a pager reads: of a namespace ("": all).
type pageList struct {
	ns   string
	opts metav1.ListOptions
}

// fetched is one page of a list as the server sent it (body), in buf;
// when it is protobuf, the list inside its envelope (list; nil: decode
// body whole); and its continue token.
type fetched struct {
	buf        *pageBuf
	body, list []byte
	cont       string
	err        error
}

// A pager reads the pages of one or more lists and hands them to one
// reader (each). Each list's pages are read in turn, the next page while
// the reader decodes the one before: the API server (encoding, gzip) and
// the client (gunzip, decoding) then work at once instead of in turns,
// which on a loaded API server is most of a large read's wall time
// (docs/scale.md). Several lists may be read at once (start's workers).
//
// Pages are read into at most max buffers, taken from pageBuffers when
// first needed and handed back when the read is done: a page is read
// into a buffer only once the reader has handed one back, so a read holds
// at most max pages whatever the cluster's size. One list read by one
// worker with two buffers reads one page ahead, no more: the page read
// into a buffer is sent only once the reader asks for the next page, that
// is once it is done with the one before, which was in the other buffer
// (the decoded objects copy what they keep out of it).
type pager struct {
	ctx    context.Context
	cancel context.CancelFunc
	rc     rest.Interface
	l      listing
	pages  chan fetched
	free   chan *pageBuf

	// largest is the largest page read so far: a buffer that must grow
	// grows to it at once (readAll).
	largest atomic.Int64
	// gunzip: the pages are asked for gzip'd and gunzipped by the pager
	// (gunzipsItself).
	gunzip bool

	mu      sync.Mutex
	bufs    []*pageBuf // every buffer taken from pageBuffers
	max     int
	started bool
}

func newPager(ctx context.Context, rc rest.Interface, l listing, max int) *pager {
	ctx, cancel := context.WithCancel(ctx)
	return &pager{ctx: ctx, cancel: cancel, rc: rc, l: l, max: max, gunzip: gunzipsItself(rc),
		pages: make(chan fetched), free: make(chan *pageBuf, max)}
}

// take returns a buffer to read a page into: a free one, a new one while
// fewer than max were taken, or else the next one the reader hands back;
// false once the read is cancelled.
func (p *pager) take() (*pageBuf, bool) {
	select {
	case b := <-p.free:
		return b, true
	default:
	}
	p.mu.Lock()
	if len(p.bufs) < p.max {
		b := pageBuffers.Get().(*pageBuf)
		p.bufs = append(p.bufs, b)
		p.mu.Unlock()
		return b, true
	}
	p.mu.Unlock()
	select {
	case b := <-p.free:
		return b, true
	case <-p.ctx.Done():
		return nil, false
	}
}

// release hands a page's buffer back.
func (p *pager) release(pg fetched) {
	if pg.buf != nil {
		p.free <- pg.buf
	}
}

// read reads one page of a list now.
func (p *pager) read(pl pageList) fetched {
	buf, ok := p.take()
	if !ok {
		return fetched{err: p.ctx.Err()}
	}
	pg := fetched{buf: buf}
	buf.Reset()
	if pg.err = readPage(p.ctx, p.rc, p.l, pl, buf, int(p.largest.Load()), p.gunzip); pg.err == nil {
		pg.body = buf.Bytes()
		for l := p.largest.Load(); int64(len(pg.body)) > l && !p.largest.CompareAndSwap(l, int64(len(pg.body))); l = p.largest.Load() {
		}
		pg.list, pg.cont, pg.err = pageContinue(pg.body, p.l.kind)
	}
	return pg
}

// start reads the lists, workers of them at once, each page by page,
// and sends their pages to the reader (each); the pages channel is closed
// when every list is read, one failed, or the read is cancelled.
func (p *pager) start(workers int, lists []pageList) {
	p.started = true
	work := make(chan pageList, len(lists))
	for _, l := range lists {
		work <- l
	}
	close(work)
	var wg sync.WaitGroup
	for range min(workers, len(lists)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range work {
				if !p.fetch(l) {
					return
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(p.pages)
	}()
}

// fetch reads the pages of one list in turn and sends each to the
// reader; false if it failed or the read was cancelled.
func (p *pager) fetch(l pageList) bool {
	for {
		pg := p.read(l)
		if pg.buf == nil {
			return false
		}
		select {
		case p.pages <- pg:
		case <-p.ctx.Done():
			p.release(pg)
			return false
		}
		if pg.err != nil {
			return false
		}
		if pg.cont == "" {
			return true
		}
		l.opts.Continue = pg.cont
	}
}

// each hands every page sent to page, in the order they come, and stops
// at the first error (a page's or page's).
func (p *pager) each(page func(fetched) error) error {
	for pg := range p.pages {
		if pg.err != nil {
			p.release(pg)
			return pg.err
		}
		err := page(pg)
		p.release(pg)
		if err != nil {
			return err
		}
	}
	return nil
}

// close stops the read and, once no worker is left, hands the buffers
// back to pageBuffers.
func (p *pager) close() {
	p.cancel()
	if p.started {
		for pg := range p.pages { // let the workers see the cancel and stop
			p.release(pg)
		}
	}
	for _, b := range p.bufs {
		pageBuffers.Put(b)
	}
}

// pageBuffers are the buffers pages are read into, kept from one read to
// the next: a buffer grows to the size of a page (a few MB), and each
// read's new ones allocated and zeroed again what the read before had
// grown to (bytes.growSlice in the profiles at 100,000 pods: 0.2 s of a
// planning pass's CPU, 0.5 s of the reaper's). A pass reads nodes, then
// pods; a warm function's next invocation may find them too, until the
// garbage collector drops them.
var pageBuffers = sync.Pool{New: func() any { return new(pageBuf) }}

// readPage reads one page of the list into buf, preferring protobuf (a
// server may answer JSON: pageContinue tells them apart).
// A buffer that must grow grows at once to hint and a little more (the
// largest page read so far). With gunzip (the client's transport asks for
// gzip'd responses: gunzipsItself), the read asks for gzip itself, so the
// transport leaves the body as it came, and gunzips the page here, once
// it is all read (gunzip).
func readPage(ctx context.Context, rc rest.Interface, l listing, pl pageList, buf *pageBuf, hint int, gunzip bool) error {
	req := rc.Get().Resource(l.resource).VersionedParams(&pl.opts, scheme.ParameterCodec).
		SetHeader("Accept", protobufType+", application/json")
	if gunzip {
		req = req.SetHeader("Accept-Encoding", "gzip")
	}
	if pl.ns != "" {
		req = req.Namespace(pl.ns)
	}
	body, err := req.Stream(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = body.Close() }()
	if !gunzip {
		err = readAll(buf, body, hint)
	} else {
		err = buf.gunzip(body, hint)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", l.kind, err)
	}
	return nil
}

// gunzip reads r to its end into the buffer, gunzipped if it is gzip'd
// (the API server gzips only responses past a size: a small page comes as
// it is). Go's transport gunzips a response as it reads it, with the
// standard library's inflater fed from the HTTP/2 body;
// klauspost/compress's, fed from the whole gzip'd page in memory (it
// reads a *bytes.Reader without copying it through a bufio.Reader), takes
// about a fifth less CPU for the same page (docs/scale.md). The gzip'd
// page is small (a twentieth of the benchmark's pods, a fifth or so of
// a real cluster's), and its buffer is kept with the page's.
func (b *pageBuf) gunzip(r io.Reader, hint int) error {
	z := pageBuf{b: b.z[:0]}
	if err := readAll(&z, r, 0); err != nil {
		return err
	}
	b.z = z.b
	if !bytes.HasPrefix(b.z, gzipMagic) {
		b.b, b.z = b.z, b.b[:0] // not gzip'd: the page as it came
		return nil
	}
	// The gzip trailer gives the page's size (modulo 4 GB): a buffer too
	// small for it is made that size and an eighth at once (so that the
	// next pages, a little larger or smaller, fit in it too), with the
	// room readAll wants left at the end. Grown by half at a time from
	// nothing, the first page's buffer was copied into each larger one,
	// ~2.5 times the page, every byte of it memory not touched before
	// (page faults: a tenth of a 10,000-pod pass's CPU).
	if n := len(b.z); n >= 18 { // a gzip header and trailer
		size := int(binary.LittleEndian.Uint32(b.z[n-4:]))
		if cap(b.b) < size+pageGrowth/4+1 && size <= 1100*n { // deflate expands at most ~1,032 times
			b.b = make([]byte, 0, size+size/8+pageGrowth/4+1)
		}
	}
	if b.zr == nil {
		b.zr = new(gzip.Reader)
	}
	b.zbr.Reset(b.z)
	if err := b.zr.Reset(&b.zbr); err != nil {
		return err
	}
	b.zr.Multistream(false)
	if err := readAll(b, b.zr, hint); err != nil {
		return err
	}
	return b.zr.Close()
}

// gzipMagic starts every gzip stream.
var gzipMagic = []byte{0x1f, 0x8b}

// gunzipsItself says whether rc's transport asks for gzip'd responses
// (client-go's default; rest.Config.DisableCompression turns it off): the
// pages are then asked for gzip'd by readPage and gunzipped with
// klauspost/compress (pageBuf.gunzip). A transport it cannot see through
// (one that does not name the one it wraps) is left to gunzip itself.
func gunzipsItself(rc rest.Interface) bool {
	r, ok := rc.(*rest.RESTClient)
	if !ok || r == nil || r.Client == nil {
		return false
	}
	rt := r.Client.Transport
	for rt != nil {
		switch t := rt.(type) {
		case *http.Transport:
			return !t.DisableCompression
		case utilnet.RoundTripperWrapper:
			rt = t.WrappedRoundTripper()
		default:
			return false
		}
	}
	return false
}

// A pageBuf is a buffer a page is read into; with it, when the page is
// read gzip'd, the gzip'd page (z) and the reader that gunzips it.
type pageBuf struct {
	b, z []byte
	zr   *gzip.Reader
	zbr  bytes.Reader
}

// Reset empties the buffer, keeping its room.
func (b *pageBuf) Reset() { b.b = b.b[:0] }

// Bytes is what was read.
func (b *pageBuf) Bytes() []byte { return b.b }

// readAll reads r to its end into buf, growing it by half at a time (at
// least pageGrowth), or at once to hint and an eighth if it is smaller:
// a buffer ends at most half as large again as the largest page read into
// it, an eighth once a page of the read has set hint, not up to twice as
// large as bytes.Buffer's doubling leaves it (a page of 1,000 realistic
// pods is ~9 MB; by doubling its buffer grew to 16 MB).
func readAll(buf *pageBuf, r io.Reader, hint int) error {
	for {
		if c := cap(buf.b); c-len(buf.b) < pageGrowth/4 {
			n := c + max(pageGrowth, c/2)
			if c < hint {
				n = max(c+pageGrowth, hint+hint/8)
			}
			nb := make([]byte, len(buf.b), n)
			copy(nb, buf.b)
			buf.b = nb
		}
		n, err := r.Read(buf.b[len(buf.b):cap(buf.b)])
		buf.b = buf.b[:len(buf.b)+n]
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// pageGrowth is the least a page buffer grows by.
const pageGrowth = 256 << 10
