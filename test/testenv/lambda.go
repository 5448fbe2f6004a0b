package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

var (
	buildMu    sync.Mutex
	builtFuncs = map[string]string{}
	buildDir   string
)

// BuildFunction builds ./functions/<name> as a Lambda bootstrap for this
// host (CGO_ENABLED=0, -tags lambda.norpc, as for deployment) once per
// test binary, and returns its path.
func BuildFunction(tb testing.TB, name string) string {
	tb.Helper()
	p, err := Build(name)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// Build is BuildFunction for programs that are not tests (the demo).
func Build(name string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := builtFuncs[name]; ok {
		return p, nil
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "joist-functions-")
		if err != nil {
			return "", err
		}
		buildDir = d
		onStop(func() { _ = os.RemoveAll(d) })
	}
	out := filepath.Join(buildDir, name, "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", out, "./functions/"+name)
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build function %s: %v\n%s", name, err, b)
	}
	builtFuncs[name] = out
	return out, nil
}

// Function is a Lambda bootstrap running under aws-lambda-rie, exactly as
// Lambda runs it: one invocation at a time, environment passed through.
type Function struct {
	Name     string
	URL      string
	cmd      *exec.Cmd
	done     chan struct{} // closed once the process has ended
	mu       sync.Mutex
	stopOnce sync.Once
}

// StartFunction runs bootstrap under aws-lambda-rie with env on free
// ports. It is stopped when the test ends.
func StartFunction(tb testing.TB, name, bootstrap string, env map[string]string) *Function {
	tb.Helper()
	f, err := RunFunction(Tool(tb, "aws-lambda-rie"), name, bootstrap, env, os.Stderr)
	if err != nil {
		tb.Fatalf("start function %s: %v", name, err)
	}
	tb.Cleanup(f.Stop)
	return f
}

// RunFunction is StartFunction for programs that are not tests (the demo).
// The function's logs go to logs. The ports are picked free, but another
// process may take one before aws-lambda-rie binds it (it then exits:
// "address already in use"): such a start is tried again on new ports.
func RunFunction(rie, name, bootstrap string, env map[string]string, logs io.Writer) (*Function, error) {
	const attempts = 5
	var err error
	for range attempts {
		var f *Function
		if f, err = runFunctionOnce(rie, name, bootstrap, env, logs); err == nil {
			return f, nil
		}
		if !errors.Is(err, errExited) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("start function %s: %d attempts: %w", name, attempts, err)
}

// errExited: aws-lambda-rie ended before it listened.
var errExited = errors.New("aws-lambda-rie exited before listening")

func runFunctionOnce(rie, name, bootstrap string, env map[string]string, logs io.Writer) (*Function, error) {
	apiPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(rie,
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", apiPort),
		"--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--log-level", "error",
		bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Env = append(os.Environ(),
		"AWS_LAMBDA_FUNCTION_NAME="+name,
		"AWS_LAMBDA_FUNCTION_TIMEOUT=120",
	)
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	// Its own process group, so Stop ends the bootstrap RIE started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	f := &Function{Name: name, URL: fmt.Sprintf("http://127.0.0.1:%d/2015-03-31/functions/function/invocations", port), cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(f.done)
	}()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, StartTimeout, true, func(context.Context) (bool, error) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return true, nil
		}
		select {
		case <-f.done:
			return false, fmt.Errorf("function %s on %s: %w", name, addr, errExited)
		default:
			return false, nil
		}
	})
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, errExited):
		return nil, err
	default:
		f.Stop()
		return nil, fmt.Errorf("wait for function %s under aws-lambda-rie to listen: %s not listening after %s", name, addr, StartTimeout)
	}
}

// Invoke sends one event and returns the function's response. A function
// error (the runtime's errorMessage/errorType payload) is an error.
func (f *Function) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("invoke %s: %w", f.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Amz-Function-Error") != "" || bytes.Contains(body, []byte(`"errorType"`)) {
		return body, fmt.Errorf("invoke %s: function error (status %d): %s", f.Name, resp.StatusCode, body)
	}
	return body, nil
}

// Stop ends the emulator and the bootstrap, as Lambda ends an execution
// environment: at once, mid-invocation if need be.
func (f *Function) Stop() {
	f.stopOnce.Do(func() {
		if f.cmd != nil && f.cmd.Process != nil {
			_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
			<-f.done
		}
	})
}
