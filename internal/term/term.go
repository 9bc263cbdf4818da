// Package term draws converge's live status lines (UX-1): one line per
// loop a command drives, kept at the bottom of a terminal and redrawn in
// place with ANSI cursor control while the loops' event lines scroll
// above them. Off a terminal (a pipe, a file, TERM=dumb) there is no
// status block: event lines are printed plain, one per line. NO_COLOR
// (https://no-color.org) drops every colour escape; cursor control stays,
// as it is not colour.
package term

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Mode is how a Board may write to its stream.
type Mode struct {
	// Live allows cursor control: the stream is a terminal that is not
	// TERM=dumb.
	Live bool
	// Color allows SGR colour escapes: Live, and NO_COLOR unset.
	Color bool
	// Width clips each status line so it never wraps (a wrapped line
	// would break the redraw); 0 means 100.
	Width int
}

// Detect is the Mode of a stream: tty says it is a terminal, getenv
// reads TERM and NO_COLOR.
func Detect(tty bool, getenv func(string) string) Mode {
	live := tty && getenv("TERM") != "dumb"
	return Mode{Live: live, Color: live && getenv("NO_COLOR") == ""}
}

// Status is one loop's status line.
type Status struct {
	Label   string    // the loop's target: a PR, a repository
	Round   int       // rounds, iterations or tasks so far
	Unit    string    // "round", "iteration", "task"; "" : "round"
	Of      int       // the bound on Round, 0 when none is shown
	Phase   string    // where the loop stands: fix, wait, iterating…
	Counts  []string  // e.g. "3 findings", "2/5 threads resolved"
	Cost    string    // "$0.42", "cost not reported"
	Started time.Time // for the elapsed time; zero: not shown
	Until   time.Time // when the loop ended: the elapsed time stops
	Ended   string    // set once the loop ended: its terminal
}

// Board is the status block of one stream, shared by the loops a
// command drives. Its methods are safe for concurrent use.
type Board struct {
	mu    sync.Mutex
	w     io.Writer
	mode  Mode
	now   func() time.Time
	keys  []string
	lines map[string]Status
	drawn int // status lines now on screen, below the cursor's line
	// partial: the last write left a line without its newline; the block
	// waits below it until the line ends.
	partial bool
	// tick, when set, refreshes the block while it has lines (elapsed
	// times move on); stop ends the refresher.
	tick time.Duration
	stop chan struct{}
}

// NewBoard is a Board writing to w; now is the clock (nil: time.Now).
func NewBoard(w io.Writer, mode Mode, now func() time.Time) *Board {
	if now == nil {
		now = time.Now
	}
	if mode.Width <= 0 {
		mode.Width = 100
	}
	return &Board{w: w, mode: mode, now: now, lines: map[string]Status{}}
}

// Live reports whether the board draws status lines.
func (b *Board) Live() bool { return b.mode.Live }

// Tick makes the board refresh its block every d while it has lines.
func (b *Board) Tick(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tick = d
}

// Write writes p above the status block: a Board is the stream's writer
// for everything else a command prints, so nothing it prints is
// overwritten by a redraw.
func (b *Board) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.mode.Live {
		return b.w.Write(p)
	}
	var sb strings.Builder
	b.erase(&sb)
	sb.Write(p)
	if len(p) > 0 {
		b.partial = p[len(p)-1] != '\n'
	}
	b.draw(&sb)
	_, err := io.WriteString(b.w, sb.String())
	return len(p), err
}

// Close stops the refresher; the block stays on screen as it was last
// drawn, with the cursor below it.
func (b *Board) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopTicker()
}

func (b *Board) stopTicker() {
	if b.stop != nil {
		close(b.stop)
		b.stop = nil
	}
}

// Println prints one event line above the status block (plainly, when
// the board is not live).
func (b *Board) Println(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.mode.Live {
		fmt.Fprintln(b.w, line)
		return
	}
	var sb strings.Builder
	b.erase(&sb)
	if b.partial {
		// End the line a plain write left open.
		sb.WriteString("\n")
		b.partial = false
	}
	sb.WriteString(line)
	sb.WriteString("\n")
	b.draw(&sb)
	io.WriteString(b.w, sb.String())
}

// Set adds or replaces the status line under key, and redraws.
func (b *Board) Set(key string, s Status) { b.Event(key, s, "") }

// Event prints line (when not "") above the block and sets key's status
// line to s, in one redraw.
func (b *Board) Event(key string, s Status, line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if line != "" {
		if !b.mode.Live {
			fmt.Fprintln(b.w, line)
		} else {
			var sb strings.Builder
			b.erase(&sb)
			if b.partial {
				// End the line a plain write left open.
				sb.WriteString("\n")
				b.partial = false
			}
			sb.WriteString(line + "\n")
			io.WriteString(b.w, sb.String())
		}
	}
	if _, ok := b.lines[key]; !ok {
		b.keys = append(b.keys, key)
	}
	b.lines[key] = s
	if b.mode.Live && b.tick > 0 && b.stop == nil {
		b.stop = make(chan struct{})
		go b.Run(b.stop, b.tick)
	}
	b.redraw()
}

// Update changes the status line under key in place (nothing when there
// is none), and redraws.
func (b *Board) Update(key string, f func(*Status)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.lines[key]
	if !ok {
		return
	}
	f(&s)
	b.lines[key] = s
	b.redraw()
}

// Remove takes key's line off the block: the loop's end is printed
// apart.
func (b *Board) Remove(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.lines[key]; !ok {
		return
	}
	delete(b.lines, key)
	for i, k := range b.keys {
		if k == key {
			b.keys = append(b.keys[:i], b.keys[i+1:]...)
			break
		}
	}
	if len(b.keys) == 0 {
		b.stopTicker()
	}
	b.redraw()
}

// Refresh redraws the block (the elapsed times move on).
func (b *Board) Refresh() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.redraw()
}

// Clear erases the block from the screen, so what is printed next is
// not overwritten; the next Set or Refresh draws it again.
func (b *Board) Clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.mode.Live || b.drawn == 0 {
		return
	}
	var sb strings.Builder
	b.erase(&sb)
	io.WriteString(b.w, sb.String())
}

// Run refreshes the block every interval until stop is closed.
func (b *Board) Run(stop <-chan struct{}, interval time.Duration) {
	if !b.mode.Live {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			b.Refresh()
		}
	}
}

func (b *Board) redraw() {
	if !b.mode.Live {
		return
	}
	var sb strings.Builder
	b.erase(&sb)
	b.draw(&sb)
	io.WriteString(b.w, sb.String())
}

// erase moves the cursor up over the block and clears to the end of the
// screen.
func (b *Board) erase(sb *strings.Builder) {
	if b.drawn > 0 {
		fmt.Fprintf(sb, "\r\033[%dA\033[J", b.drawn)
		b.drawn = 0
	}
}

// draw writes every status line, each ending in a newline, so the cursor
// stays below the block.
func (b *Board) draw(sb *strings.Builder) {
	if b.partial {
		return
	}
	keys := b.keys
	more := 0
	if len(keys) > MaxLines {
		// A block taller than the screen could not be moved over: the
		// first loops' lines, then how many more there are.
		keys, more = keys[:MaxLines-1], len(keys)-(MaxLines-1)
	}
	for _, k := range keys {
		sb.WriteString(b.render(b.lines[k]))
		sb.WriteString("\033[K\n")
		b.drawn++
	}
	if more > 0 {
		fmt.Fprintf(sb, "… and %d more loop(s)\033[K\n", more)
		b.drawn++
	}
}

// MaxLines is the most status lines a block shows.
const MaxLines = 8

// SGR codes of the status line's parts.
const (
	bold   = "1"
	dim    = "2"
	cyan   = "36"
	yellow = "33"
	green  = "32"
)

// Line is s as its status line reads, without colour: what a plain
// stream or a test compares.
func Line(s Status, now time.Time) string {
	return strings.Join(parts(s, now, func(_, t string) string { return t }), "  ")
}

func (b *Board) render(s Status) string {
	paint := func(code, t string) string {
		if !b.mode.Color || t == "" {
			return t
		}
		return "\033[" + code + "m" + t + "\033[0m"
	}
	// Clip on the plain text, then paint: escapes take no columns. A
	// long phase (a wait's reason) is shortened first, so the counts, the
	// elapsed time and the cost stay.
	plain := parts(s, b.now(), func(_, t string) string { return t })
	if over := utf8.RuneCountInString(strings.Join(plain, "  ")) - b.mode.Width; over > 0 && s.Ended == "" && s.Phase != "" {
		if keep := utf8.RuneCountInString(s.Phase) - over - 1; keep >= 8 {
			s.Phase = string([]rune(s.Phase)[:keep]) + "…"
			plain = parts(s, b.now(), func(_, t string) string { return t })
		}
	}
	width, keep := 0, 0
	for i, p := range plain {
		w := utf8.RuneCountInString(p)
		if i > 0 {
			w += 2
		}
		if width+w > b.mode.Width && i > 0 {
			break
		}
		width += w
		keep = i + 1
	}
	painted := parts(s, b.now(), paint)[:keep]
	line := strings.Join(painted, "  ")
	if keep == 1 && utf8.RuneCountInString(plain[0]) > b.mode.Width {
		line = string([]rune(plain[0])[:b.mode.Width-1]) + "…"
	}
	return line
}

// parts are the status line's fields in order, each painted by paint.
func parts(s Status, now time.Time, paint func(code, text string) string) []string {
	unit := s.Unit
	if unit == "" {
		unit = "round"
	}
	round := fmt.Sprintf("%s %d", unit, s.Round)
	if s.Of > 0 {
		round += fmt.Sprintf("/%d", s.Of)
	}
	out := []string{paint(bold, s.Label), round}
	switch {
	case s.Ended != "":
		out = append(out, paint(green, s.Ended))
	case s.Phase != "":
		out = append(out, paint(cyan, s.Phase))
	}
	if len(s.Counts) > 0 {
		out = append(out, strings.Join(s.Counts, ", "))
	}
	if !s.Started.IsZero() {
		if !s.Until.IsZero() {
			now = s.Until
		}
		out = append(out, paint(dim, Elapsed(now.Sub(s.Started))))
	}
	if s.Cost != "" {
		out = append(out, paint(yellow, s.Cost))
	}
	return out
}

// Elapsed is d as a status line shows it: 42s, 3m05s, 1h02m.
func Elapsed(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Truncate(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// Beside is a writer for another stream shown on the same screen (a
// terminal's stderr): what is written to it goes above the block too, so
// a redraw does not overwrite it.
func (b *Board) Beside(w io.Writer) io.Writer { return besideWriter{b: b, w: w} }

type besideWriter struct {
	b *Board
	w io.Writer
}

func (s besideWriter) Write(p []byte) (int, error) {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.mode.Live || b.drawn == 0 && !b.partial {
		return s.w.Write(p)
	}
	var sb strings.Builder
	b.erase(&sb)
	io.WriteString(b.w, sb.String())
	n, err := s.w.Write(p)
	sb.Reset()
	if len(p) > 0 {
		b.partial = p[len(p)-1] != '\n'
	}
	b.draw(&sb)
	io.WriteString(b.w, sb.String())
	return n, err
}
