package cli

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/review/copilot"
)

// TestPR_M4_TheBinaryReadsBackItsReviewBot: every command of the binary
// (a worker too) reads back a PR loop configuration naming Copilot.
func TestPR_M4_TheBinaryReadsBackItsReviewBot(t *testing.T) {
	c := prloop.DefaultConfig()
	c.Bot = copilot.New()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back prloop.Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("read back %+v, want %+v", back, c)
	}
}
