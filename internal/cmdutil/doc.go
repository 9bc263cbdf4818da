// Package cmdutil is the plumbing every command shares, as gh's
// pkg/cmdutil: the IO streams, the Factory (state store, forge client and
// agent makers), errors that carry an exit code (UsageErr, ExitErr,
// SilentExit, ExitCodeOf), the agent builder and its pre-flight check,
// and config fields as flags. internal/cli's commands and a loop kind's
// own wiring use it alike.
package cmdutil
