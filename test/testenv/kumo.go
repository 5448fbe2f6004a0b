package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Region is the region the test ground pretends to be in (the seed's).
const Region = "ap-northeast-2"

// Account is kumo's account id.
const Account = "000000000000"

// KumoEnv is a running kumo AWS emulator.
type KumoEnv struct {
	Endpoint string
	Port     int
}

var (
	kumoOnce sync.Once
	kumoEnv  *KumoEnv
	kumoErr  error
)

// Kumo returns the package's shared kumo, starting it on first use.
func Kumo(tb testing.TB) *KumoEnv {
	tb.Helper()
	bin := Tool(tb, "kumo")
	kumoOnce.Do(func() { kumoEnv, kumoErr = StartKumo(bin) })
	if kumoErr != nil {
		tb.Fatalf("start kumo: %v", kumoErr)
	}
	return kumoEnv
}

// StartKumo starts kumo on a free port and waits for its health check.
// The caller of Kumo never stops it: Main does. The demo uses this too.
func StartKumo(bin string) (*KumoEnv, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	// KUMO_PORT, never --port: EventBridge delivery uses the variable.
	cmd.Env = append(os.Environ(), fmt.Sprintf("KUMO_PORT=%d", port), "KUMO_REGION="+Region)
	if os.Getenv("JOIST_KUMO_VERBOSE") == "" {
		cmd.Stdout, cmd.Stderr = nil, nil
	} else {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	onStop(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	k := &KumoEnv{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), Port: port}
	if err := waitHTTP(k.Endpoint+"/health", StartTimeout); err != nil {
		return nil, fmt.Errorf("wait for kumo (the AWS emulator) to answer /health: %w", err)
	}
	return k, nil
}

// AWSConfig is an SDK configuration that sends every service to kumo.
func (k *KumoEnv) AWSConfig() aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(k.Endpoint),
	}
}

// FreePort asks the kernel for a free TCP port on loopback.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitHTTP(url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s not up after %s: %v", url, timeout, last)
}
