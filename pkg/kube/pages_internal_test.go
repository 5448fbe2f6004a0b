package kube

import (
	"bytes"
	stdgzip "compress/gzip"
	"io"
	"net/http"
	"testing"
	"testing/iotest"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestReadAll_BufferEndsNearThePageSize checks that a page buffer grows
// to at most half as large again as the page read into it (an eighth,
// once a page of the read has given its size), not to twice the page as
// doubling does, whatever the reads' sizes, and that it holds the page.
func TestReadAll_BufferEndsNearThePageSize(t *testing.T) {
	page := bytes.Repeat([]byte("0123456789abcdef"), 9<<20/16+3) // ~9 MB: a page of 1,000 pods
	for _, tc := range []struct {
		name     string
		r        func() io.Reader
		hint     int
		mostRoom float64
	}{
		{"no hint", func() io.Reader { return bytes.NewReader(page) }, 0, 1.5},
		{"no hint, small reads", func() io.Reader { return iotest.HalfReader(bytes.NewReader(page)) }, 0, 1.5},
		{"the largest page so far", func() io.Reader { return bytes.NewReader(page) }, len(page), 1.125 + 0.01},
		{"a smaller page so far", func() io.Reader { return bytes.NewReader(page) }, len(page) / 3, 1.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf pageBuf
			if err := readAll(&buf, tc.r(), tc.hint); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), page) {
				t.Fatalf("read %d bytes, not the page's %d", len(buf.Bytes()), len(page))
			}
			if room := float64(cap(buf.b)) / float64(len(page)); room > tc.mostRoom {
				t.Errorf("the buffer is %.2f times the page, want at most %.3f", room, tc.mostRoom)
			}
			// Read again into the same buffer: it does not grow.
			c := cap(buf.b)
			buf.Reset()
			if err := readAll(&buf, tc.r(), tc.hint); err != nil {
				t.Fatal(err)
			}
			if cap(buf.b) != c || !bytes.Equal(buf.Bytes(), page) {
				t.Errorf("the second read grew the buffer from %d to %d, or read other bytes", c, cap(buf.b))
			}
		})
	}
}

// TestPageBuf_GunzipsWhatIsGzipped checks that a page read gzip'd is
// gunzipped into the buffer and one that came as it is (the API server
// gzips only large responses) is kept as it came, read after read into
// the same buffer.
func TestPageBuf_GunzipsWhatIsGzipped(t *testing.T) {
	page := append([]byte("k8s\x00"), bytes.Repeat([]byte("0123456789abcdef"), 1<<20/16+5)...)
	var z bytes.Buffer
	w, _ := stdgzip.NewWriterLevel(&z, stdgzip.BestSpeed) // as the API server writes it
	if _, err := w.Write(page); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var buf pageBuf
	for i, tc := range []struct {
		name string
		body []byte
	}{
		{"gzip'd", z.Bytes()},
		{"as it came", page},
		{"gzip'd again", z.Bytes()},
		{"small, as it came", page[:100]},
		{"gzip'd, in small reads", z.Bytes()},
	} {
		var r io.Reader = bytes.NewReader(tc.body)
		if i == 4 {
			r = iotest.OneByteReader(r)
		}
		buf.Reset()
		if err := buf.gunzip(r, 0); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := page
		if len(tc.body) == 100 {
			want = page[:100]
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s: read %d bytes, not the page's %d", tc.name, len(buf.Bytes()), len(want))
		}
		// The first page, gzip'd, is read into a buffer made its size
		// and an eighth at once (the gzip trailer's), not grown to it by
		// copies; the pages after it fit.
		if want := len(page) + len(page)/8 + pageGrowth/4 + 1; i == 0 && cap(buf.b) != want {
			t.Errorf("%s: the buffer is %d bytes for a page of %d, want %d", tc.name, cap(buf.b), len(page), want)
		}
	}
	buf.Reset()
	if err := buf.gunzip(bytes.NewReader(z.Bytes()[:z.Len()/2]), 0); err == nil {
		t.Errorf("a gzip'd page cut short was read without an error")
	}
}

// TestGunzipsItself_OnlyWhereTheTransportWouldHave checks that a read
// asks for gzip'd pages itself only where client-go's transport would
// have asked (not with DisableCompression) and can be seen (every
// wrapper names the transport it wraps).
func TestGunzipsItself_OnlyWhereTheTransportWouldHave(t *testing.T) {
	for _, tc := range []struct {
		name    string
		disable bool
		wrap    func(http.RoundTripper) http.RoundTripper
		want    bool
	}{
		{"client-go's transport", false, nil, true},
		{"compression disabled", true, nil, false},
		{"a wrapper naming the one it wraps", false, func(rt http.RoundTripper) http.RoundTripper { return naming{rt} }, true},
		{"a wrapper naming the one it wraps, compression disabled", true, func(rt http.RoundTripper) http.RoundTripper { return naming{rt} }, false},
		{"a wrapper that does not", false, func(rt http.RoundTripper) http.RoundTripper { return opaque{rt} }, false},
	} {
		cfg := &rest.Config{Host: "https://127.0.0.1:1", DisableCompression: tc.disable, WrapTransport: tc.wrap,
			TLSClientConfig: rest.TLSClientConfig{Insecure: true}} // (without TLS settings client-go gives http.DefaultTransport, compressing)
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := gunzipsItself(cs.CoreV1().RESTClient()); got != tc.want {
			t.Errorf("%s: gunzips itself %v, want %v", tc.name, got, tc.want)
		}
	}
}

type naming struct{ http.RoundTripper }

func (n naming) WrappedRoundTripper() http.RoundTripper { return n.RoundTripper }

type opaque struct{ http.RoundTripper }
