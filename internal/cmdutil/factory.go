package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/backends"
	"github.com/convergeloop/converge/internal/forge/provider"
	"github.com/convergeloop/converge/internal/store"
)

// Factory is what every command is built with, as gh's cmdutil.Factory:
// the streams, and the makers of what a run talks to — its state store,
// its forge client and its agents. A command is newXCmd(f, runF): with a runF it
// calls runF with its parsed options instead of running, so a test
// checks a command's flags without running a loop; the run itself takes
// what it opens from the factory its options carry.
type Factory struct {
	IOStreams *IOStreams
	// OpenStore opens, or creates, the state store in dir ("": the
	// default) of a command that runs something (openStore), with the
	// run's secrets and redactor as opts.
	OpenStore func(ctx context.Context, dir string, opts ...store.Option) (*store.Store, error)
	// OpenStoreFile opens, or creates, the store at path: what OpenStore
	// and OpenExistingStore open with, and a store of another name (a
	// worker's tickets). Every store converge opens is opened here.
	OpenStoreFile func(ctx context.Context, path string, opts ...store.Option) (*store.Store, error)
	// OpenExistingStore opens the state store of a read-only command,
	// never creating one; run names the run it reads, for the error
	// (openExistingStore).
	OpenExistingStore func(ctx context.Context, dir, run string) (*store.Store, error)
	// ForgeClient builds a forge's client through its provider: every
	// forge client of pr, serve, worker and demo is built here.
	ForgeClient func(p provider.Provider, o provider.ClientOptions) (provider.Client, error)
	// Agent builds every agent of a run (backends.Config.Build): name is
	// one of backends.Kinds, cmd the command agent's command line, role
	// backends.RoleFix, RoleReview or RoleJudge; set carries the run's
	// agent settings (AgentBuilder).
	Agent func(set backends.Config, name, cmd, role string) (agent.Agent, error)
}

// NewFactory is the real factory over ios. ios.Backend, when set,
// builds the CLI backends (a test's double).
func NewFactory(ios *IOStreams) *Factory {
	f := &Factory{IOStreams: ios, OpenStoreFile: openStoreFile}
	f.OpenStore = func(ctx context.Context, dir string, opts ...store.Option) (*store.Store, error) {
		return openStore(ctx, f, dir, opts...)
	}
	f.OpenExistingStore = func(ctx context.Context, dir, run string) (*store.Store, error) {
		return openExistingStore(ctx, f, dir, run)
	}
	f.ForgeClient = func(p provider.Provider, o provider.ClientOptions) (provider.Client, error) { return p.NewClient(o) }
	f.Agent = func(set backends.Config, name, cmd, role string) (agent.Agent, error) {
		if ios.Backend != nil && backends.Known(name) {
			set.Name, set.Role = name, role
			return ios.Backend(set)
		}
		return set.Build(name, cmd, role)
	}
	return f
}

// openStoreFile is the one place a store is opened (store.Open): a
// guard test fails on any other.
func openStoreFile(ctx context.Context, path string, opts ...store.Option) (*store.Store, error) {
	db, err := store.Open(ctx, path, opts...)
	if err != nil {
		return nil, fmt.Errorf("open state store %s: %w", path, err)
	}
	return db, nil
}

// OrDefault is f, or the real factory over ios when f is nil: options
// built in code (a worker's from a workflow's parameters, a test's)
// carry none.
func (f *Factory) OrDefault(ios *IOStreams) *Factory {
	if f != nil {
		return f
	}
	return NewFactory(ios)
}

// OpenRun opens the existing state store in dir and reads run id from
// it, for the commands that name one run (status RUN, log, follow): an
// unknown run is a usage error pointing at converge status. The caller
// closes the store.
func (f *Factory) OpenRun(ctx context.Context, dir, id string) (*store.Store, store.Run, error) {
	db, err := f.OpenExistingStore(ctx, dir, id)
	if err != nil {
		return nil, store.Run{}, err
	}
	r, err := db.GetRun(ctx, id)
	if err != nil {
		db.Close()
		if errors.Is(err, store.ErrNotFound) {
			return nil, store.Run{}, UsageErr("no run %q in the state store (see converge status)", id)
		}
		return nil, store.Run{}, err
	}
	return db, r, nil
}

// StorePath is the state store in dir (--state), or with dir "" the
// default one (store.DefaultPath: under $XDG_STATE_HOME, else $HOME).
func StorePath(ios *IOStreams, dir string) string {
	if dir != "" {
		return filepath.Join(dir, "converge.db")
	}
	return store.DefaultPath(ios.Getenv)
}

// openStore opens, or creates, the state store of a command that runs
// something; a state directory it cannot write is bad input (IF-1).
func openStore(ctx context.Context, f *Factory, dir string, opts ...store.Option) (*store.Store, error) {
	path := StorePath(f.IOStreams, dir)
	if err := WritableDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return f.OpenStoreFile(ctx, path, opts...)
}

// ErrNoStore is a read-only command's missing state store.
var ErrNoStore = errors.New("no state store")

// openExistingStore opens the state store of a read-only command (status,
// proof, log, stop): it never creates one, so a mistyped --state is an
// error (exit 2), not an empty store that says "no runs yet". Without
// --state a missing default store is ErrNoStore: nothing ran yet.
// run, when the command reads one run, is named in the error.
func openExistingStore(ctx context.Context, f *Factory, dir, run string) (*store.Store, error) {
	path := StorePath(f.IOStreams, dir)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		prefix := ""
		if run != "" {
			prefix = fmt.Sprintf("no run %q: ", run)
		}
		switch {
		case dir != "":
			return nil, UsageErr("%s--state %s holds no state store (no %s); name the directory converge pr, loop or plan ran with (converge status --state DIR)", prefix, dir, filepath.Base(path))
		case run != "":
			return nil, UsageErr("%snothing has run yet (no state store at %s)", prefix, path)
		}
		return nil, ErrNoStore
	} else if err != nil {
		return nil, UsageErr("state store %s: %v", path, err)
	}
	return f.OpenStoreFile(ctx, path)
}

// WritableDir checks that converge can keep its store, clones and
// worktrees in dir, creating it if need be: a read-only or unusable
// --state is one line naming it, before anything runs (IF-1: exit 2).
func WritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return UsageErr("state directory %s cannot be created (%v); give a writable one with --state DIR", dir, errors.Unwrap(err))
	}
	f, err := os.CreateTemp(dir, ".converge-write-check-*")
	if err != nil {
		return UsageErr("state directory %s is not writable (%v); converge keeps its store and clones there: give a writable one with --state DIR", dir, errors.Unwrap(err))
	}
	f.Close()
	return os.Remove(f.Name())
}
