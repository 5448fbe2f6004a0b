package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Token derives an idempotency token (at most 64 characters, as
// CreateFleet's ClientToken allows) from the parts of a plan.
func Token(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "joist-" + hex.EncodeToString(h.Sum(nil))[:40]
}

// effectiveToken is the client token to send for a plan's token. EC2
// remembers a token's outcome, failures included: the same plan sent again
// after a capacity failure (the offerings' unavailability has expired,
// nothing else changed) would get the old failure back. So after a plan's
// launch failed, the next attempt for it carries a token of its own.
// Only responses that launched nothing count as failures: a call that
// errored may have launched (its response lost), and keeps its token so
// a retry finds that instance.
func (l *Launcher) effectiveToken(token string) string {
	if token == "" {
		return ""
	}
	l.mu.Lock()
	n := l.failedTokens[token]
	l.mu.Unlock()
	if n == 0 {
		return token
	}
	return Token(token, "after-failure", strconv.Itoa(n))
}

func (l *Launcher) noteFailure(token string) {
	if token == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failedTokens == nil {
		l.failedTokens = map[string]int{}
	}
	if len(l.failedTokens) > 10000 {
		// A warm Launcher lives for hours at most; this bounds it anyway.
		l.failedTokens = map[string]int{}
	}
	l.failedTokens[token]++
}
