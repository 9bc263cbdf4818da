// Package testutil holds test helpers shared across packages that need
// no package of their own: a real Temporal dev server (TemporalDevServer).
package testutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/convergeloop/converge/internal/proc"
)

// TemporalEnv names the Temporal CLI binary the tests start the dev server
// from. .ci/run builds it (`go install
// github.com/temporalio/cli/cmd/temporal@v1.5.1`) and sets it.
const TemporalEnv = "CONVERGE_TEST_TEMPORAL"

// TemporalNamespace is created by every dev server TemporalDevServer
// starts, beside "default".
const TemporalNamespace = "converge-test"

// TemporalBinary returns the Temporal CLI from TemporalEnv, or `temporal`
// on PATH. Without it the test is skipped with a message saying how to get
// it — except under CI=true, where it fails: CI must run the Temporal
// tests. Nothing is ever downloaded.
func TemporalBinary(t testing.TB) string {
	t.Helper()
	bin, err := findTemporal()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but the Temporal CLI is missing: %v (.ci/run builds it and sets %s)", err, TemporalEnv)
		}
		t.Skipf("Temporal CLI not found (%v): go install github.com/temporalio/cli/cmd/temporal@v1.5.1, then set %s to its path", err, TemporalEnv)
	}
	return bin
}

func findTemporal() (string, error) {
	if p := os.Getenv(TemporalEnv); p != "" {
		st, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", TemporalEnv, p, err)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s=%s: not an executable file", TemporalEnv, p)
		}
		return p, nil
	}
	p, err := exec.LookPath("temporal")
	if err != nil {
		return "", fmt.Errorf("%s unset and no temporal on PATH", TemporalEnv)
	}
	return p, nil
}

// TemporalDevServer starts a Temporal dev server for t (the binary from
// TemporalBinary) and returns its frontend's host:port once it answers
// and TemporalNamespace is there; it is stopped when t ends.
//
// Each call starts a server of its own, not one shared by the test
// binary: it is ready in about a second, and a test that kills workers
// or leaves workflows running cannot disturb another test's. Subtests
// that may share one call it once in their parent.
func TemporalDevServer(t testing.TB) string {
	t.Helper()
	return TemporalDevServerAt(t, TemporalBinary(t))
}

// TemporalDevServerAt is TemporalDevServer with the CLI binary at bin.
//
// The server runs headless (no UI), in memory (no --db-filename), on
// 127.0.0.1 and a free port; its HTTP API and metrics ports are left to
// the CLI, which picks free ones. It runs in a process group of its own,
// through internal/proc, so stopping it stops everything it started, and
// it dies with the test binary. Its output goes to a file under
// t.TempDir(), printed when t has failed.
func TemporalDevServerAt(t testing.TB, bin string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if td, ok := d.Deadline(); ok && td.Add(-10*time.Second).Before(deadline) {
			deadline = td.Add(-10 * time.Second)
		}
	}
	dir := t.TempDir()
	// A free port can be taken between our probe and the server's bind:
	// a start that fails on it is tried again on another.
	for attempt := 1; ; attempt++ {
		logPath := filepath.Join(dir, "temporal-dev-"+strconv.Itoa(attempt)+".log")
		hostPort, err := startTemporal(t, bin, dir, logPath, deadline)
		if err == nil {
			return hostPort
		}
		out, _ := os.ReadFile(logPath)
		if attempt < 3 && errors.Is(err, errServerExited) && bytes.Contains(out, []byte("address already in use")) {
			continue
		}
		t.Fatalf("temporal dev server: %v\n--- %s ---\n%s", err, logPath, clipTail(out))
	}
}

var errServerExited = errors.New("exited before it answered")

// startTemporal starts one server and waits until it answers or ends;
// the server is stopped at t's cleanup either way.
func startTemporal(t testing.TB, bin, dir, logPath string, deadline time.Time) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	hostPort := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		res proc.Result
		err error
	}
	done := make(chan result, 1)
	argv := []string{bin, "server", "start-dev",
		"--headless",
		"--ip", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--namespace", TemporalNamespace,
		// The developer's own Temporal settings must not reach the test.
		"--disable-config-file", "--disable-config-env",
	}
	go func() {
		res, err := proc.Run(ctx, proc.Spec{
			Argv:      argv,
			Dir:       dir,
			Combined:  true,
			MaxOutput: 4 << 10, // the whole output is in the log file
			Grace:     5 * time.Second,
			// The test's own server, not an agent's run (SEC-7).
			Trusted: true,
			OnLine: func(_ bool, line string) {
				_, _ = io.WriteString(logFile, line+"\n")
			},
		})
		done <- result{res, err}
	}()
	var stopped, ready bool
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		_ = logFile.Close()
	}
	t.Cleanup(func() {
		stop()
		// A server that never answered had its log printed already.
		if ready && t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("temporal dev server %s (%s):\n%s", hostPort, logPath, clipTail(out))
		}
	})

	start := time.Now()
	logger := tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if err := temporalReady(hostPort, logger, deadline); err == nil {
			ready = true
			t.Logf("temporal dev server %s ready in %s", hostPort, time.Since(start).Round(time.Millisecond))
			return hostPort, nil
		} else {
			last = err
		}
		select {
		case r := <-done:
			done <- r // for stop
			stop()
			return "", fmt.Errorf("%s (exit %d, run error %v): %w", strings.Join(argv, " "), r.res.ExitCode, r.err, errServerExited)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("%s did not answer in %s: %v", strings.Join(argv, " "), time.Since(start).Round(time.Second), last)
		}
	}
}

// temporalReady: the frontend answers its health check and knows
// TemporalNamespace.
func temporalReady(hostPort string, logger tlog.Logger, deadline time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if d, ok := ctx.Deadline(); ok && deadline.Before(d) {
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	c, err := client.DialContext(ctx, client.Options{HostPort: hostPort, Namespace: TemporalNamespace, Logger: logger})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return err
	}
	_, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: TemporalNamespace})
	return err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// clipTail keeps the end of a server log: the failure is at its end.
func clipTail(b []byte) string {
	const max = 64 << 10
	if len(b) <= max {
		return string(b)
	}
	return fmt.Sprintf("[%d bytes cut]\n%s", len(b)-max, b[len(b)-max:])
}

// TemporalLogger is an SDK logger writing to t's log while t runs and
// dropping lines after: the SDK's default logger writes to stdout, and a
// worker still shutting down when t ends must not log to a finished t.
func TemporalLogger(t testing.TB) tlog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.close)
	return tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}
