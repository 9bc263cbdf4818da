package agent

// Judges are agents asked for a verdict, not a change: the recap gate's
// (PR-G2, package recap), the classifier's (PR-S5, package classify),
// the done-check loop's (LOOP-2, package checkloop) and the fix
// verifier's (PR-V1, package verify). Each package renders
// its own prompt into Task.Prompt and reads the answer from the last line
// of Result.Output against its own JSON Schema; every backend serves them
// like a review angle (AG-B1: the same backends serve every role).
const (
	TaskKindRecap    = "recap"    // recap.TaskKind
	TaskKindClassify = "classify" // classify.TaskKind
	TaskKindJudge    = "judge"    // checkloop.TaskKindJudge
	TaskKindVerify   = "verify"   // verify.TaskKind: does a change address a finding (PR-V1)
)

// IsJudge reports whether a task of kind asks for a judge's verdict.
func IsJudge(kind string) bool {
	switch kind {
	case TaskKindRecap, TaskKindClassify, TaskKindJudge, TaskKindVerify:
		return true
	}
	return false
}

// ReadOnly reports whether a task of kind only reads the worktree and
// answers in its final message: a review angle (a findings array) or a
// judge (a verdict). A CLI backend runs it with read-only permissions and
// returns the final message as it is in Result.Output, for the caller's
// own schema; the Record only says how the process ended (ProcessRecord),
// since the answer is no status record of a change.
func ReadOnly(kind string) bool {
	return kind == TaskKindReview || kind == TaskKindCheck || IsJudge(kind)
}
