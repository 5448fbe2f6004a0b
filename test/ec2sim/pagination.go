package ec2sim

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// pageLimits are one describe call's MaxResults bounds. def is the page size
// EC2 uses when the caller sends no MaxResults: 0 means "everything", but
// some calls (DescribeInstanceTypes, for one) page anyway, which catches
// callers that forget to follow NextToken.
type pageLimits struct{ min, max, def int }

type pageRequest struct {
	action string
	size   int // 0: everything
	offset int
}

// readPage reads MaxResults and NextToken.
func readPage(p *params, action string, lim pageLimits) (pageRequest, error) {
	pr := pageRequest{action: action, size: lim.def}
	max, err := p.optInt("MaxResults")
	if err != nil {
		return pr, err
	}
	if max != nil {
		if *max < lim.min || *max > lim.max {
			return pr, invalidParam("Value ( %d ) for parameter maxResults is invalid. Expecting a value between %d and %d.", *max, lim.min, lim.max)
		}
		pr.size = *max
	}
	if tok, ok := p.get("NextToken"); ok && tok != "" {
		off, err := decodeToken(action, tok)
		if err != nil {
			return pr, err
		}
		pr.offset = off
	}
	return pr, nil
}

// paginate cuts one page out of items and returns the token for the next,
// "" on the last page.
func paginate[T any](items []T, pr pageRequest) ([]T, string) {
	if pr.offset >= len(items) {
		return nil, ""
	}
	items = items[pr.offset:]
	if pr.size == 0 || len(items) <= pr.size {
		return items, ""
	}
	return items[:pr.size], encodeToken(pr.action, pr.offset+pr.size)
}

// Tokens are opaque to callers, as EC2's are; they carry the action so a
// token from one call cannot be replayed against another.
func encodeToken(action string, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("ec2sim|" + action + "|" + strconv.Itoa(offset)))
}

func decodeToken(action, tok string) (int, error) {
	bad := clientErr("InvalidPaginationToken", "The specified pagination token is not valid or is expired: %s", tok)
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, bad
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 || parts[0] != "ec2sim" || parts[1] != action {
		return 0, bad
	}
	off, err := strconv.Atoi(parts[2])
	if err != nil || off < 0 {
		return 0, bad
	}
	return off, nil
}
