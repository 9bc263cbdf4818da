package prwork

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkPR_G6_StepAfterWait is what an idle loop's giving back its
// worktree costs the step after the wait (BENCHMARKS.md): "kept" is a
// step's git work on a worktree the run kept (fetch, reset to the head),
// "parked" the same step after ReleaseWorktree (remove the worktree,
// then add it again from the cached clone at the head), on a repository
// of files KiB-sized files.
func BenchmarkPR_G6_StepAfterWait(b *testing.B) {
	for _, files := range []int{10, 2000} {
		base := map[string]string{}
		for i := range files {
			base[fmt.Sprintf("pkg%02d/file%04d.txt", i%50, i)] = strings.Repeat(fmt.Sprintf("line %d\n", i), 128)
		}
		pr, bare := localPR(b, base, map[string]string{"pkg00/file0000.txt": "changed\n"})
		for _, mode := range []string{"kept", "parked"} {
			b.Run(fmt.Sprintf("files=%d/%s", files, mode), func(b *testing.B) {
				ctx := context.Background()
				ws := testWorkspace(b, bare, nil, "")
				if _, err := ws.Prepare(ctx, pr); err != nil {
					b.Fatal(err)
				}
				if err := ws.atHead(ctx, pr); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for range b.N {
					if mode == "parked" {
						if err := ws.ReleaseWorktree(ctx); err != nil {
							b.Fatal(err)
						}
					}
					if err := ws.atHead(ctx, pr); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if err := ws.Cleanup(ctx); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
