package testenv

import (
	"fmt"
	"net"
	"time"
)

// StartTimeout is how long the test ground waits for each program it
// starts (etcd, kube-apiserver, kumo, a function under aws-lambda-rie) to
// answer: generous, for a cold machine busy with other work; a wait ends
// as soon as the program answers.
const StartTimeout = 3 * time.Minute

func waitTCP(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s not listening after %s", addr, timeout)
}
