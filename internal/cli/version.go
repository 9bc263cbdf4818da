package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/spf13/cobra"
)

// Set at link time by a release build, e.g.
//
//	go build -ldflags "-X github.com/convergeloop/converge/internal/cli.Version=v1.2.0 \
//	  -X github.com/convergeloop/converge/internal/cli.Commit=abc1234 \
//	  -X github.com/convergeloop/converge/internal/cli.BuildDate=2026-12-02T06:00:00Z"
//
// Empty ones are read from the build info Go records in the binary (the
// module version of `go install …@v1.2.0`, vcs.revision and vcs.time of a
// build in a git checkout).
var (
	Version   string
	Commit    string
	BuildDate string
)

// buildInfo is what `converge version` prints.
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	Date     string `json:"date,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// readBuildInfo is the binary's version: the link-time values first,
// then Go's build info.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: Version, Commit: Commit, Date: BuildDate, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		b.Go = cmp.Or(bi.GoVersion, b.Go)
		linked := Commit != ""
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if !linked {
					b.Commit = s.Value
				}
			case "vcs.time":
				if b.Date == "" {
					b.Date = s.Value
				}
			case "vcs.modified":
				b.Modified = !linked && s.Value == "true"
			}
		}
	}
	b.Version = cmp.Or(b.Version, "dev")
	return b
}

// String is the one line of `converge version` and `converge --version`.
func (b buildInfo) String() string {
	var parts []string
	if b.Commit != "" {
		c := b.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if b.Modified {
			c += "-dirty"
		}
		parts = append(parts, "commit "+c)
	}
	if b.Date != "" {
		parts = append(parts, "built "+b.Date)
	}
	parts = append(parts, b.Go, b.Platform)
	return fmt.Sprintf("converge %s (%s)", b.Version, strings.Join(parts, ", "))
}

type versionOptions struct{ JSON bool }

func newVersionCmd(f *cmdutil.Factory, runF func(*versionOptions) error) *cobra.Command {
	ios := f.IOStreams
	opts := &versionOptions{}
	cmd := &cobra.Command{
		Use:     "version",
		Example: `  converge version --json`,
		Short:   "Print converge's version, commit, build date and Go version",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cmdutil.UsageErr("version takes no arguments (got %q)", args[0])
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(opts)
			}
			b := readBuildInfo()
			if opts.JSON {
				return json.NewEncoder(ios.Out).Encode(b)
			}
			fmt.Fprintln(ios.Out, b)
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

// addVersion gives root its --version flag and version subcommand; both
// print the same line.
func addVersion(root *cobra.Command, f *cmdutil.Factory) {
	root.Version = readBuildInfo().String()
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(newVersionCmd(f, nil))
}
