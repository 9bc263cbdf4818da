// Package fleet holds the fleet engine's end-to-end test: the converge
// binary's workers and `converge pr --engine temporal` against a real
// Temporal dev server and the GitHub emulator. It has no code of its own.
package fleet
