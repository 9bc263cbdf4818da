// Package graphql holds the GraphQL documents the GitHub client sends, one
// file per operation, embedded so a test can check each against GitHub's
// public schema and the emulator can be held to serving them.
package graphql

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.graphql
var files embed.FS

// Doc returns the document in name.graphql; it panics on a missing file
// because the set is fixed at build time.
func Doc(name string) string {
	b, err := files.ReadFile(name + ".graphql")
	if err != nil {
		panic("graphql: no document " + name)
	}
	return string(b)
}

// All returns every document by file name, sorted.
func All() map[string]string {
	out := map[string]string{}
	entries, _ := fs.ReadDir(files, ".")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		out[strings.TrimSuffix(n, ".graphql")] = Doc(strings.TrimSuffix(n, ".graphql"))
	}
	return out
}
