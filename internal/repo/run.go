package repo

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// DefaultMaxOutput is RunCommand's output limit when maxOutput <= 0.
const DefaultMaxOutput = 1 << 20

// RunCommand runs argv in dir and returns its combined stdout and stderr,
// keeping only the last maxOutput bytes (a failing test prints its verdict
// last), and its exit code. A command that runs and fails is not an error:
// err is nil and exitCode non-zero. err reports a command that could not
// start (exitCode -1) or was stopped because ctx ended (the context's
// error): then the whole process group is killed, so test runners' child
// processes do not linger.
//
// env is the complete environment, as in exec.Cmd (nil inherits this
// process's); build and test commands should get ScrubEnv(os.Environ()).
func RunCommand(ctx context.Context, dir string, argv []string, env []string, maxOutput int) (output string, exitCode int, err error) {
	if len(argv) == 0 {
		return "", -1, errors.New("run command: empty argv")
	}
	if maxOutput <= 0 {
		maxOutput = DefaultMaxOutput
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	setProcessGroup(cmd)
	cmd.Cancel = func() error { return killProcessGroup(cmd) }
	// Grandchildren may hold the output pipe open after the group kill
	// misses them (they changed group): stop waiting for them eventually.
	cmd.WaitDelay = 5 * time.Second
	out := &tailBuffer{max: maxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	runErr := cmd.Run()
	output = out.String()
	if ctx.Err() != nil {
		return output, -1, fmt.Errorf("run %s: %w", argv[0], ctx.Err())
	}
	if runErr == nil {
		return output, 0, nil
	}
	var ee *exec.ExitError
	if errors.As(runErr, &ee) {
		if code := ee.ExitCode(); code >= 0 {
			return output, code, nil
		}
		return output, -1, fmt.Errorf("run %s: %w", argv[0], runErr) // killed by a signal
	}
	return output, -1, fmt.Errorf("run %s: %w", argv[0], runErr)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	dropped int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.max {
		t.dropped += int64(len(t.buf) + len(p) - t.max)
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.dropped += int64(over)
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dropped == 0 {
		return string(t.buf)
	}
	return "[… " + strconv.FormatInt(t.dropped, 10) + " earlier bytes dropped]\n" + string(t.buf)
}
