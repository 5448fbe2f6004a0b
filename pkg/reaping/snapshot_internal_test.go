package reaping

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/joist-dev/joist/pkg/catalog"
)

// TestUnavailableOn_NilWhileNothingIsMarked: consolidation's simulator is
// told of offerings out of capacity only when the Lease marks one that
// holds now, so its solves keep what the prepared catalog holds (as the
// provisioner's: solveUnavailable); a mark that holds is told.
func TestUnavailableOn_NilWhileNothingIsMarked(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	expired := catalog.NewUnavailable(time.Minute)
	expired.Mark(now.Add(-time.Hour), "m5.large", "us-east-1a", "spot")
	marked := catalog.NewUnavailable(time.Minute)
	marked.Mark(now.Add(-time.Hour), "m5.large", "us-east-1a", "spot")
	marked.Mark(now, "c5.large", "us-east-1b", "on-demand")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		name        string
		enc         string
		told        bool
		unavailable []string // instance type, zone, capacity type told unavailable
	}{
		{"no annotation", "", false, nil},
		{"empty set", catalog.NewUnavailable(time.Minute).Encode(), false, nil},
		{"only expired marks", expired.Encode(), false, nil},
		{"unreadable", "v9 junk", false, nil},
		{"a mark that holds", marked.Encode(), true, []string{"c5.large", "us-east-1b", "on-demand"}},
	} {
		got := unavailableOn(c.enc, now, log)
		if (got != nil) != c.told {
			t.Errorf("%s: simulator told of unavailable offerings %v, want %v", c.name, got != nil, c.told)
			continue
		}
		if got == nil {
			continue
		}
		if !got(c.unavailable[0], c.unavailable[1], c.unavailable[2]) {
			t.Errorf("%s: %v not told unavailable", c.name, c.unavailable)
		}
		if got("m5.large", "us-east-1a", "spot") {
			t.Errorf("%s: the expired mark is told unavailable", c.name)
		}
	}
}
