// Package hygiene holds the tests that keep the repository's shape: no
// build output in git, the state store opened in one place, Decide's
// files free of I/O. It has no code of its own.
package hygiene
