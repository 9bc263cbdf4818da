package cli

import (
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
)

// REL-1's hub subcommands:
//
//	hub faults SEED RATE [kinds=K,K] [slow=D] [retry-after=D] [reset-in=D]
//	                              seeded faults on converge's (the author's) API requests from
//	                              now on (fakehub.Faults; kinds: 5xx reset slow partial primary
//	                              secondary, default all); RATE 0 turns them off
//	hub outage D                  every API request answers 503 for D from now (0: over)
//	hub faults-met MIN [MAX]      the emulator answered at least MIN (at most MAX) of converge's
//	                              requests with a fault, drawn or refused in a spent limit's
//	                              window; the faults are logged
func init() {
	hubCmds["faults"] = hubFaults
	hubCmds["outage"] = hubOutage
	hubCmds["faults-met"] = hubFaultsMet
}

func hubFaults(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: hub faults SEED RATE [kinds=K,K] [slow=D] [retry-after=D] [reset-in=D]")
	}
	seed, err := strconv.ParseInt(args[0], 10, 64)
	ts.Check(err)
	rate, err := strconv.ParseFloat(args[1], 64)
	ts.Check(err)
	f := fakehub.Faults{Seed: seed, Rate: rate, Logins: []string{fakehub.LoginAuthor}}
	for _, o := range args[2:] {
		k, v, _ := strings.Cut(o, "=")
		var d time.Duration
		if k != "kinds" {
			d, err = time.ParseDuration(v)
			ts.Check(err)
		}
		switch k {
		case "kinds":
			for _, kind := range strings.Split(v, ",") {
				f.Kinds = append(f.Kinds, fakehub.FaultKind(kind))
			}
		case "slow":
			f.Slow = d
		case "retry-after":
			f.RetryAfter = d
		case "reset-in":
			f.ResetIn = d
		default:
			ts.Fatalf("hub faults: unknown option %q", o)
		}
	}
	h.hub.SetFaults(f)
}

func hubOutage(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: hub outage D")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	h.hub.Outage(d)
}

func hubFaultsMet(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: hub faults-met MIN [MAX]")
	}
	lo, err := strconv.Atoi(args[0])
	ts.Check(err)
	hi := -1
	if len(args) == 2 {
		hi, err = strconv.Atoi(args[1])
		ts.Check(err)
	}
	hits := h.hub.FaultHits()
	for _, f := range hits {
		ts.Logf("fault %s", f)
	}
	n := len(hits) + h.hub.FaultRefusals()
	ts.Logf("%d fault(s) drawn, %d request(s) refused in a spent limit's window", len(hits), h.hub.FaultRefusals())
	if n < lo || (hi >= 0 && n > hi) {
		ts.Fatalf("converge met %d fault(s), want %s", n, strings.Join(args, "..."))
	}
}
