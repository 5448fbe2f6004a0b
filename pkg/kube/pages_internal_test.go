package kube

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
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
