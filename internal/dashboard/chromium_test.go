package dashboard

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"image/png"
	"iter"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds the browser: $CONVERGE_TEST_CHROMIUM, else chromium or
// chromium-browser on PATH. Without one the test skips, except on CI
// (CI=true), where .ci/run installs it and a skip would hide the test.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CONVERGE_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium: install Debian's chromium (apt-get install chromium) or set CONVERGE_TEST_CHROMIUM to the browser"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browserErrors collects what the page reports as wrong: console errors
// and warnings, uncaught exceptions, and the browser's own error log (a
// failed load, a script or style refused under the page's CSP).
type browserErrors struct {
	mu    sync.Mutex
	msgs  []string
	probe chan struct{} // closed when the probe message arrives
}

// probeText is a console error the test writes itself: once it arrives,
// every earlier message has (the stream keeps their order), and it
// proves the messages are read at all.
const probeText = "probe-3b1f"

func (b *browserErrors) read(msgs iter.Seq2[chromedp.ConsoleMessage, error]) {
	for m, err := range msgs {
		if err != nil {
			return
		}
		switch {
		case m.Type == chromedp.ConsoleError && m.Text == probeText:
			close(b.probe)
		case m.Type == chromedp.ConsoleError, m.Type == chromedp.ConsoleWarning, m.IsException():
			b.mu.Lock()
			b.msgs = append(b.msgs, fmt.Sprintf("%s (%s %s:%d)", m, m.Source, m.URL, m.Line))
			b.mu.Unlock()
		}
	}
}

func (b *browserErrors) list() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.msgs...)
}

// UX-2, issue 20: the dashboard in a real headless Chromium over a store
// of three runs: the page loads without a console error, the run list has
// three rows, the 4-round run's chart has 4 points in every series (read
// from the DOM), a finding's hostile body stays text, a live run's page
// follows the run as it advances, and a screenshot is taken.
func TestUX_2_DashboardInChromium(t *testing.T) {
	bin := chromium(t)
	db, s := seedStore(t)
	// With a token, as off loopback (SEC-4): the page carries the
	// address's ?token= to every read and to its event stream.
	const token = "t0ken-9c2e"
	h, err := New(db, Options{Addr: "127.0.0.1:0", Token: token, Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	hs.RegisterOnShutdown(h.Close)
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := hs.Shutdown(ctx); err != nil {
			t.Errorf("shutdown with a live page open: %v", err)
		}
	})
	base := "http://" + ln.Addr().String()

	// The machine's network is closed and the test must not depend on it:
	// no first-run, sync, component or background fetches.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(alloc)
	defer cancelCtx()
	// A bound for a loaded CI machine; every wait below is for a
	// condition, and the test takes a few seconds.
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	errs := &browserErrors{probe: make(chan struct{})}
	// Subscribed before the first page loads: no message is missed.
	go errs.read(chromedp.Console(ctx))

	// The runs list.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/?token="+token),
		chromedp.WaitVisible(chromedp.CSS(`#runs tbody tr[data-run]`)),
	); err != nil {
		t.Fatalf("runs list: %v (browser: %q)", err, errs.list())
	}
	states := eval[[]string](ctx, t, `[...document.querySelectorAll('#runs tbody tr[data-run]')].map(r => r.dataset.run + "=" + r.dataset.state)`)
	if len(states) != 3 {
		t.Errorf("run list rows = %d, want 3: %v", len(states), states)
	}
	want := map[string]bool{s.Done + "=ended": true, s.Errored + "=ended": true, s.Running + "=running": true}
	for _, st := range states {
		if !want[st] {
			t.Errorf("unexpected row %s (rows %v)", st, states)
		}
	}

	// The finished run's page: its chart, read from the SVG.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#runs tr[data-run="`+s.Done+`"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline[data-run="`+s.Done+`"] svg[data-chart="cost"]`)),
	); err != nil {
		t.Fatalf("run page: %v (browser: %q)", err, errs.list())
	}
	points := eval[map[string]int](ctx, t, `(() => { const n = {}; for (const c of document.querySelectorAll('#timeline circle[data-series]')) n[c.dataset.series] = (n[c.dataset.series] || 0) + 1; return n; })()`)
	series := []string{"verdict:structural", "verdict:minor", "source:copilot", "source:human", "source:local",
		"threads:open", "threads:resolved", "diff:cumulative", "cost:cumulative"}
	for _, name := range series {
		if points[name] != 4 {
			t.Errorf("series %s has %d points, want 4 (all: %v)", name, points[name], points)
		}
	}
	if len(points) != len(series) {
		t.Errorf("series %v, want exactly %v", points, series)
	}
	if n := eval[int](ctx, t, `document.querySelectorAll('#timeline line.limit[data-limit="120"]').length`); n != 1 {
		t.Errorf("the diff chart draws %d 3× lines at 120, want 1", n)
	}
	imgs := eval[int](ctx, t, `document.querySelectorAll('main img, main b').length`)
	pwned := eval[bool](ctx, t, `window.__pwned === 1`)
	if imgs != 0 || pwned {
		t.Errorf("hostile text became markup: %d img or b elements, its script ran: %v", imgs, pwned)
	}
	if got := eval[[]string](ctx, t, `[...document.querySelectorAll('#threads .finding-summary')].map(e => e.textContent)`); !slices.Contains(got, hostile) {
		t.Errorf("the hostile finding is not shown as text: %q", got)
	}
	if got := eval[string](ctx, t, `document.getElementById('decisions').textContent`); !strings.Contains(got, hostile) {
		t.Errorf("the hostile decision is not shown as text: %q", got)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	// CONVERGE_TEST_SCREENSHOT_DIR keeps the screenshot for a person
	// to look at; by default it goes with the test's temporary files.
	path := filepath.Join(cmp.Or(os.Getenv("CONVERGE_TEST_SCREENSHOT_DIR"), t.TempDir()), "dashboard.png")
	if err := os.WriteFile(path, shot, 0o600); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil || img.Bounds().Dx() < 100 || img.Bounds().Dy() < 100 {
		t.Errorf("screenshot %s (%d bytes) is not a real PNG: %v", path, len(shot), err)
	}

	// The running run's page follows the run: a new round appears.
	if err := chromedp.Do(ctx,
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[chromedp.Void](`location.hash = '#/run/`+s.Running+`'`)(ctx, tg)
			return err
		}),
		chromedp.WaitVisible(chromedp.CSS(`#timeline[data-run="`+s.Running+`"] circle[data-series="threads:open"][data-round="2"]`)),
	); err != nil {
		t.Fatalf("running run's page: %v (browser: %q)", err, errs.list())
	}
	if n := eval[int](ctx, t, `document.querySelectorAll('#timeline circle[data-series="threads:open"]').length`); n != 2 {
		t.Fatalf("running run shows %d rounds before it advances, want 2", n)
	}
	addRound(t, db, s.Running, 3, seededFinding(3))
	// The page re-reads within a poll (100 ms) of the store's change; the
	// bound is for a loaded machine.
	liveCtx, cancelLive := context.WithTimeout(ctx, 30*time.Second)
	defer cancelLive()
	if err := chromedp.Do(liveCtx,
		chromedp.WaitVisible(chromedp.CSS(`#timeline[data-run="`+s.Running+`"] circle[data-series="threads:open"][data-round="3"]`)),
	); err != nil {
		t.Fatalf("the page did not follow the run: %v (browser: %q)", err, errs.list())
	}
	n := eval[int](ctx, t, `document.querySelectorAll('#timeline circle[data-series="threads:open"]').length`)
	rounds := eval[string](ctx, t, `document.getElementById('run-rounds').textContent`)
	if n != 3 || rounds != "3" {
		t.Errorf("after the run advanced: %d points, rounds %q; want 3 and 3", n, rounds)
	}

	eval[chromedp.Void](ctx, t, `console.error("`+probeText+`")`)
	select {
	case <-errs.probe:
	case <-ctx.Done():
		t.Fatalf("the console messages are not read: the probe never arrived (others: %q)", errs.list())
	}
	for _, e := range errs.list() {
		t.Errorf("browser reported: %s", e)
	}
}

// eval runs a script in the page and decodes its value.
func eval[T any](ctx context.Context, t *testing.T, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}
