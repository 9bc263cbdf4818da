package proc_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/convergeloop/converge/internal/proc"
)

// BenchmarkSEC_7_StartOverhead is what containment adds to the start of
// a run (SEC-7): a run of true contained (the supervisor, the jail's init
// in its namespaces, the mounts, the control groups) against one under
// the supervisor alone (Trusted). The difference of the two is the
// sandbox's cost per agent run, recorded in BENCHMARKS.md.
func BenchmarkSEC_7_StartOverhead(b *testing.B) {
	if err := proc.Available(); err != nil {
		b.Fatalf("containment is not available here: %v", err)
	}
	bin, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for _, c := range []struct {
		name    string
		trusted bool
	}{{"supervised", true}, {"contained", false}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				r, err := proc.Run(context.Background(), proc.Spec{Argv: []string{bin}, Dir: dir, Trusted: c.trusted})
				if err != nil || r.ExitCode != 0 {
					b.Fatalf("%+v %v", r, err)
				}
			}
		})
	}
}
