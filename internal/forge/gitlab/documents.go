package gitlab

import (
	"fmt"
	"strings"
)

// Every GraphQL document converge sends to GitLab is built here, so it can
// be validated against GitLab's schema (Documents).

// MaxBatch bounds the aliased mutations in one GraphQL request.
const MaxBatch = 50

// replySelection is what a batched reply returns: enough to prove the note
// exists (its id) and to hand it back.
const replySelection = `note { id body author { username } createdAt } errors`

// resolveSelection proves a discussion's new resolution.
const resolveSelection = `discussion { id resolved } errors`

// BatchReplyDoc is n aliased createNote mutations m0..m(n-1), each taking
// its CreateNoteInput from $i0..$i(n-1).
func BatchReplyDoc(n int) string {
	return batchDoc("BatchReply", "createNote", "CreateNoteInput", replySelection, n)
}

// BatchResolveDoc is n aliased discussionToggleResolve mutations.
func BatchResolveDoc(n int) string {
	return batchDoc("BatchResolve", "discussionToggleResolve", "DiscussionToggleResolveInput", resolveSelection, n)
}

// Documents lists every document converge may send, at the batch sizes
// that bound them (1 and MaxBatch), by a name for test output.
func Documents() map[string]string {
	return map[string]string{
		"BatchReply/1":                           BatchReplyDoc(1),
		fmt.Sprintf("BatchReply/%d", MaxBatch):   BatchReplyDoc(MaxBatch),
		"BatchResolve/1":                         BatchResolveDoc(1),
		fmt.Sprintf("BatchResolve/%d", MaxBatch): BatchResolveDoc(MaxBatch),
	}
}

func batchDoc(name, field, inputType, selection string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "mutation %s(", name)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$i%d: %s!", i, inputType)
	}
	b.WriteString(") {\n")
	for i := range n {
		fmt.Fprintf(&b, "  m%d: %s(input: $i%d) { %s }\n", i, field, i, selection)
	}
	b.WriteString("}\n")
	return b.String()
}
