// Package scaffold is what `converge init` writes into a repository: a
// .converge.yaml with every setting and its default (from the config
// table itself), a review instructions skeleton, their copy in Copilot's
// instructions (a marked section, the rest of that file left alone) and,
// on request, the GitHub Action's workflow. Nothing existing is replaced
// unless forced; the marked section is updated in place.
package scaffold

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/convergeloop/converge/internal/config"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prwork"
)

// WorkflowFile is where --action puts the Action's workflow.
const WorkflowFile = ".github/workflows/converge.yml"

// The Copilot section's delimiters.
const (
	SectionBegin = "<!-- converge:review-instructions begin -->"
	SectionEnd   = "<!-- converge:review-instructions end -->"
)

// ReviewInstructions is the skeleton of the review instructions file.
const ReviewInstructions = `# Review instructions

<!--
Read by converge's local review (each angle gets this file, quoted as
data) and by its classifier's judge, as the pull request's BASE branch
has it; converge init copies it into .github/copilot-instructions.md
(a marked section) so that Copilot's review reads the same. Write what a
reviewer of this repository must know and could not guess from the code.
Edit this file, then run converge init --sync to update Copilot's copy.
-->

## What matters here

- (the invariants a change must keep, e.g. "every exported function
  returns wrapped errors, never panics")

## Conventions

- (naming, layout, error handling, tests: what a reviewer should hold a
  change to)

## Not findings

- (what reviewers should not raise here, e.g. "generated files under
  gen/ are not reviewed")
`

// Workflow is the Action's workflow: converge on each pull request that
// opens, reopens or leaves draft.
const Workflow = `# converge: drive each pull request to a proven two-stable finish.
name: converge
on:
  pull_request:
    types: [opened, reopened, ready_for_review]
permissions:
  contents: write
  pull-requests: write
  issues: write
  statuses: write
  checks: write
concurrency:
  group: converge-${{ github.event.pull_request.number }}
  cancel-in-progress: false
jobs:
  converge:
    # Not on drafts, and not on forks: their token cannot push to the branch.
    if: ${{ !github.event.pull_request.draft && github.event.pull_request.head.repo.full_name == github.repository }}
    runs-on: ubuntu-latest
    timeout-minutes: 300
    steps:
      - uses: convergeloop/converge@main # pin a commit SHA
        with:
          agent: claude
          api-key: ${{ secrets.ANTHROPIC_API_KEY }}
          # A personal token or a GitHub App token, so that converge's pushes
          # start CI. Without it converge pushes with GITHUB_TOKEN, which
          # starts no workflows, and does not wait for checks.
          token: ${{ secrets.CONVERGE_TOKEN }}
`

// Options are what converge init was asked for.
type Options struct {
	Dir    string // the repository's root
	Force  bool   // replace existing files
	Action bool   // write the Action's workflow too
	// Sync only updates Copilot's copy of the review instructions.
	Sync bool
}

// Change is one file init wrote or left.
type Change struct {
	Path string // relative to the repository, slash-separated
	What string // created, replaced, updated, unchanged, kept
}

// ExistsError is a file init would replace without --force.
type ExistsError struct{ Path string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s exists and differs from what converge init writes; --force replaces it (or move it away)", e.Path)
}

// InputError is a problem with what is in the repository (a symbolic
// link, broken markers, a bad .converge.yaml): bad input, not a failure.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func badInput(format string, args ...any) error {
	return &InputError{fmt.Errorf(format, args...)}
}

// Init writes the files into o.Dir. It checks every file before writing
// any, so a refusal writes nothing.
func Init(o Options) ([]Change, error) {
	type file struct{ path, content string }
	var whole []file
	if !o.Sync {
		whole = append(whole, file{config.FileName, config.Template(config.PRFields())})
		if o.Action {
			whole = append(whole, file{WorkflowFile, Workflow})
		}
	}
	var plan []Change
	for _, f := range whole {
		cur, exists, err := read(o.Dir, f.path)
		if err != nil {
			return nil, err
		}
		switch {
		case !exists:
			plan = append(plan, Change{f.path, "created"})
		case cur == f.content:
			plan = append(plan, Change{f.path, "unchanged"})
		case o.Force:
			plan = append(plan, Change{f.path, "replaced"})
		default:
			return nil, &ExistsError{f.path}
		}
	}
	instr, err := instructionsPath(o)
	if err != nil {
		return nil, err
	}
	// The review instructions are the user's once they exist: init
	// writes the skeleton only where there are none, and copies what
	// is there into Copilot's instructions.
	cur, exists, err := read(o.Dir, instr)
	if err != nil {
		return nil, err
	}
	if !exists && o.Sync {
		return nil, badInput("%s: no review instructions to sync; converge init without --sync writes a skeleton", instr)
	}
	text := cur
	if !exists {
		text = ReviewInstructions
	}
	if strings.Contains(text, SectionBegin) || strings.Contains(text, SectionEnd) {
		return nil, badInput("%s holds a converge:review-instructions marker; remove it: the markers delimit its copy in %s", instr, prwork.CopilotInstructionsFile)
	}
	copilot, hadCopilot, err := read(o.Dir, prwork.CopilotInstructionsFile)
	if err != nil {
		return nil, err
	}
	section := Section(instr, text)
	if strings.Contains(section, "<!-- converge:review-memory") {
		return nil, badInput("%s: its settled review points section (review_memory) has a begin marker without its end, or the reverse; fix or remove the markers", instr)
	}
	next, err := PutSection(copilot, section)
	if err != nil {
		return nil, badInput("%s: %w", prwork.CopilotInstructionsFile, err)
	}
	for i, c := range plan {
		if c.What != "unchanged" {
			if err := write(o.Dir, c.Path, whole[i].content); err != nil {
				return nil, err
			}
		}
	}
	if exists {
		plan = append(plan, Change{instr, "kept"})
	} else {
		if err := write(o.Dir, instr, text); err != nil {
			return nil, err
		}
		plan = append(plan, Change{instr, "created"})
	}
	c := Change{prwork.CopilotInstructionsFile, "unchanged"}
	if next != copilot {
		c.What = "updated"
		if !hadCopilot {
			c.What = "created"
		}
		if err := write(o.Dir, c.Path, next); err != nil {
			return nil, err
		}
	}
	return append(plan, c), nil
}

// instructionsPath is the review_instructions setting of the repository's
// .converge.yaml when it has one (and init keeps it), else the default.
func instructionsPath(o Options) (string, error) {
	fields := config.PRFields()
	def, _ := config.Lookup(fields, "review_instructions")
	if o.Force && !o.Sync {
		return def.Default, nil // the file is replaced by the template
	}
	f, err := config.ReadFile(fields, filepath.Join(o.Dir, config.FileName))
	if err != nil {
		return "", &InputError{err}
	}
	if f != nil {
		if v, ok := f.Values["review_instructions"]; ok {
			return v.Value, nil
		}
	}
	return def.Default, nil
}

// Section is Copilot's copy of the review instructions at path: their
// text without the settled review points, which review_memory keeps in
// a section of Copilot's file of their own.
func Section(path, instructions string) string {
	body := strings.TrimSpace(prloop.PutMemorySection(instructions, ""))
	return SectionBegin + "\n" +
		"<!-- Copied by converge init from " + path + ": edit that file, then run converge init --sync; an edit made here is replaced. -->\n" +
		body + "\n" + SectionEnd + "\n"
}

// PutSection puts section in place of content's marked section, or after
// content when it has none. Text outside the markers is kept as it is.
func PutSection(content, section string) (string, error) {
	i := strings.Index(content, SectionBegin)
	j := strings.Index(content, SectionEnd)
	switch {
	case i < 0 && j < 0:
		if strings.TrimSpace(content) == "" {
			return section, nil
		}
		return strings.TrimRight(content, "\n") + "\n\n" + section, nil
	case i < 0 || j < i || strings.Count(content, SectionBegin) > 1 || strings.Count(content, SectionEnd) > 1:
		return "", errors.New("its converge:review-instructions markers are not one begin followed by one end; fix or remove them")
	}
	rest := strings.TrimPrefix(content[j+len(SectionEnd):], "\n")
	return content[:i] + section + rest, nil
}

// read reads dir's file p; a missing file is "", false. A path through a
// symbolic link is refused: init writes regular files inside the
// repository only.
func read(dir, p string) (string, bool, error) {
	cur := dir
	for _, part := range strings.Split(p, "/") {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", false, badInput("%s is, or is under, a symbolic link; converge init writes regular files inside the repository only", p)
		}
	}
	b, err := os.ReadFile(cur)
	if err != nil {
		return "", false, err
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return "", false, badInput("%s is not a text file", p)
	}
	return string(b), true, nil
}

func write(dir, p, content string) error {
	abs := filepath.Join(dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}
