package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/temporal"
)

// Engine names.
const (
	engineLocal    = "local"
	engineTemporal = "temporal"
)

// engineOptions choose the engine a command runs or reads its loops on:
// the embedded one (this process, SQLite) or a Temporal cluster.
type engineOptions struct {
	Engine    string
	Address   string
	Namespace string
	TaskQueue string
}

// defaultTaskQueue is the queue converge's workers poll unless told.
const defaultTaskQueue = "converge"

func addEngineFlags(f *pflag.FlagSet, o *engineOptions) {
	f.StringVar(&o.Engine, "engine", engineLocal, "engine: local (this process, the state directory's SQLite) or temporal (workflows on a Temporal cluster, run by converge worker)")
	addTemporalFlags(f, o)
}

func addTemporalFlags(f *pflag.FlagSet, o *engineOptions) {
	addClusterFlags(f, o)
	f.StringVar(&o.TaskQueue, "task-queue", "", "Temporal task queue converge's workers poll (default "+defaultTaskQueue+")")
}

// addReadEngineFlags are the engine flags of a command that reads or
// signals runs (status, proof, log, stop): it names a workflow, and no
// task queue matters to it.
func addReadEngineFlags(f *pflag.FlagSet, o *engineOptions) {
	f.StringVar(&o.Engine, "engine", engineLocal, "engine whose runs to read: local (the state directory's SQLite) or temporal (workflows on a Temporal cluster)")
	addClusterFlags(f, o)
}

func addClusterFlags(f *pflag.FlagSet, o *engineOptions) {
	f.StringVar(&o.Address, "temporal-address", "", "Temporal frontend HOST:PORT (default TEMPORAL_ADDRESS, then 127.0.0.1:7233)")
	f.StringVar(&o.Namespace, "namespace", "", "Temporal namespace (default TEMPORAL_NAMESPACE, then default)")
}

// check refuses an unknown engine, and Temporal flags without it.
func (o *engineOptions) check(ios *cmdutil.IOStreams) error {
	switch o.Engine {
	case engineLocal, "":
		if o.Address != "" || o.Namespace != "" || o.TaskQueue != "" {
			return cmdutil.UsageErr("--temporal-address, --namespace and --task-queue need --engine temporal (they name the cluster of its runs)")
		}
		return nil
	case engineTemporal:
		o.resolve(ios.Getenv)
		return nil
	}
	return cmdutil.UsageErr("--engine %q: want local or temporal", o.Engine)
}

func (o *engineOptions) temporal() bool { return o.Engine == engineTemporal }

func (o *engineOptions) resolve(getenv func(string) string) {
	if o.Address == "" {
		o.Address = strings.TrimSpace(getenv("TEMPORAL_ADDRESS"))
	}
	if o.Address == "" {
		o.Address = "127.0.0.1:7233"
	}
	if o.Namespace == "" {
		o.Namespace = strings.TrimSpace(getenv("TEMPORAL_NAMESPACE"))
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.TaskQueue == "" {
		o.TaskQueue = defaultTaskQueue
	}
}

// dial connects to the Temporal frontend; a frontend that does not answer
// is exit 7 (the service is unreachable), with what to check.
func (o *engineOptions) dial(ctx context.Context) (client.Client, error) {
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  o.Address,
		Namespace: o.Namespace,
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	if err != nil {
		return nil, &cmdutil.ExitErr{Code: exitcode.Unreachable, Err: fmt.Errorf("temporal at %s (namespace %s) does not answer: %w; check --temporal-address and that the cluster runs", o.Address, o.Namespace, err)}
	}
	return c, nil
}

// temporalErr makes a workflow's failure an exit: a run that could not be
// bound on a worker carries its exit code.
func temporalErr(err error) error {
	if be, ok := temporal.AsBindError(err); ok {
		return &cmdutil.ExitErr{Code: be.Code, Err: errors.New(be.Message)}
	}
	return err
}
