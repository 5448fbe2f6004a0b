package forwarder

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/joist-dev/joist/events"
)

// PutEventsAPI is the part of the EventBridge client the forwarder uses.
type PutEventsAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// maxPutBytes is EventBridge's limit on the summed size of the entries of
// one PutEvents call (not only of one entry): ten full pending-pods events
// would exceed it, so calls are cut by size as well as by count.
const maxPutBytes = 256 * 1024

// putTimeout bounds one PutEvents call including the SDK's own retries, so
// a hung connection cannot stall the forwarder's loop.
const putTimeout = 30 * time.Second

// entrySize is an entry's size as EventBridge counts it against
// maxPutBytes: 14 bytes for the time plus the UTF-8 bytes of source,
// detail type, detail and resources.
func entrySize(e types.PutEventsRequestEntry) int {
	n := len(aws.ToString(e.Source)) + len(aws.ToString(e.DetailType)) + len(aws.ToString(e.Detail))
	if e.Time != nil {
		n += 14
	}
	for _, r := range e.Resources {
		n += len(r)
	}
	return n
}

// calls cuts entries into PutEvents calls of at most
// events.MaxEntriesPerPut entries and maxPutBytes, keeping their order.
func calls(qs []queued) [][]queued {
	var out [][]queued
	var cur []queued
	size := 0
	for _, q := range qs {
		n := entrySize(q.entry)
		if len(cur) > 0 && (len(cur) == events.MaxEntriesPerPut || size+n > maxPutBytes) {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, q)
		size += n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// put makes one PutEvents call and returns the entries EventBridge did not
// take: all of them if the call failed, else those whose result carries an
// error code. Errors are logged, never returned: the caller retries, and a
// forwarder that cannot reach EventBridge keeps watching so it catches up
// when EventBridge is back.
func (f *Forwarder) put(ctx context.Context, batch []queued) []queued {
	in := &eventbridge.PutEventsInput{Entries: make([]types.PutEventsRequestEntry, len(batch))}
	pods, nodes := 0, 0
	for i, q := range batch {
		in.Entries[i] = q.entry
		if q.pods > 0 {
			pods += q.pods
		} else {
			nodes++
		}
	}
	ctx, cancel := context.WithTimeout(ctx, putTimeout)
	defer cancel()
	out, err := f.opts.Put.PutEvents(ctx, in)
	if err != nil {
		f.log.Error("PutEvents failed", slog.String("bus", f.opts.Bus), slog.Int("entries", len(batch)), slog.Any("error", err))
		return batch
	}
	var failed []queued
	for i, q := range batch {
		switch {
		case i < len(out.Entries) && out.Entries[i].ErrorCode != nil:
			f.log.Warn("EventBridge refused an entry",
				slog.String("detailType", aws.ToString(q.entry.DetailType)),
				slog.String("errorCode", aws.ToString(out.Entries[i].ErrorCode)),
				slog.String("errorMessage", aws.ToString(out.Entries[i].ErrorMessage)),
				slog.Int("attempt", q.attempts+1))
			failed = append(failed, q)
		case i >= len(out.Entries) && out.FailedEntryCount > 0:
			// Results do not line up with entries; without knowing which
			// failed, resend those without a result (duplicates are harmless).
			failed = append(failed, q)
		}
	}
	f.log.Info("put events", slog.String("bus", f.opts.Bus), slog.Int("entries", len(batch)),
		slog.Int("failed", len(failed)), slog.Int("pods", pods), slog.Int("nodes", nodes))
	return failed
}
