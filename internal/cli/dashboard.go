package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/dashboard"
	"github.com/convergeloop/converge/internal/server"
)

type dashboardOptions struct {
	StateDir string
	Addr     string

	factory *cmdutil.Factory
}

func newDashboardCmd(factory *cmdutil.Factory, runF func(*dashboardOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &dashboardOptions{factory: factory}
	cmd := &cobra.Command{
		Use: "dashboard",
		Example: `  # the runs of the default state directory, at http://127.0.0.1:8766/
  converge dashboard

  # another state directory and port
  converge dashboard --state ~/.local/state/converge-ci --addr 127.0.0.1:9000`,
		Short: "Serve a web dashboard of the runs in the state store",
		Long: `Serve a web dashboard of the state store (UX-2): the runs, and per run a
timeline chart of its rounds (findings by verdict and source, threads
open and resolved, the loop's diff against the 3x bound, cost), its
threads with their dispositions, the decision log and the proof. Pages
follow the store live, whichever converge writes it. converge serve
shows the same dashboard at /dashboard/.

It binds to loopback by default. Off loopback it needs ` + envServeToken + `:
open the page with ?token=TOKEN, or send Authorization: Bearer TOKEN.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runDashboard(cmd.Context(), ios, opts)
		},
	}
	cmd.Flags().StringVar(&opts.StateDir, "state", "", "state directory (default $XDG_STATE_HOME/converge)")
	cmd.Flags().StringVar(&opts.Addr, "addr", "127.0.0.1:8766", "address to serve the dashboard on")
	return cmd
}

func runDashboard(ctx context.Context, ios *cmdutil.IOStreams, opts *dashboardOptions) error {
	token := ios.Getenv(envServeToken)
	if !server.IsLoopback(opts.Addr) && token == "" {
		return cmdutil.UsageErr("--addr %s is off loopback: set %s, the token the dashboard then requires", opts.Addr, envServeToken)
	}
	f := opts.factory.OrDefault(ios)
	db, err := f.OpenExistingStore(ctx, opts.StateDir, "")
	if errors.Is(err, cmdutil.ErrNoStore) {
		// Nothing ran yet: the dashboard shows the first run as it starts.
		db, err = f.OpenStore(ctx, opts.StateDir)
	}
	if err != nil {
		return err
	}
	defer db.Close()
	h, err := dashboard.New(db, dashboard.Options{Addr: opts.Addr, Token: token})
	if err != nil {
		return cmdutil.UsageErr("%v", err)
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return cmdutil.UsageErr("--addr %s: %v", opts.Addr, err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	hs.RegisterOnShutdown(h.Close) // live pages' streams end, so Shutdown does not wait on them
	fmt.Fprintf(ios.Out, "dashboard on http://%s/\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("dashboard: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
}

// mountDashboard serves the dashboard of db at /dashboard/ beside next
// (converge serve's webhooks and API), under the same loopback rule and
// token. The http.Server must call the returned close on Shutdown.
func mountDashboard(next http.Handler, db dashboard.Source, addr, token string) (http.Handler, func(), error) {
	h, err := dashboard.New(db, dashboard.Options{Addr: addr, Token: token})
	if err != nil {
		return nil, nil, cmdutil.UsageErr("%v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/dashboard/", http.StripPrefix("/dashboard", h))
	mux.Handle("/", next)
	return mux, h.Close, nil
}
