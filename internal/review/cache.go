package review

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// cacheEntry is one cached review. The key's inputs are stored with it so
// that a hash collision or a hand-edited file cannot serve another head.
type cacheEntry struct {
	Key    string `json:"key"`
	Result Result `json:"result"`
}

// cacheKey names a review by what decides its outcome: the head (which
// fixes the diff against an unchanged base and the instructions read from
// it), the base, the angles with their focus, and the agent.
func (r *Reviewer) cacheKey(in Input, angles []Angle) string {
	h := sha256.New()
	field := func(s string) { fmt.Fprintf(h, "%d:%s;", len(s), s) }
	field("converge-local-review-v1")
	field(in.Head)
	field(in.BaseRef)
	field(in.Instructions)
	field(r.Agent.Name())
	field(r.AgentID)
	if r.Model != "" {
		// Another model is another review; keys without one stay as
		// they were.
		field("model=" + r.Model)
	}
	for _, a := range angles {
		field(a.Name)
		field(a.Focus)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (r *Reviewer) cachePath(key string) string {
	return filepath.Join(r.CacheDir, "local-review-"+key[:32]+".json")
}

func (r *Reviewer) loadCache(key, head string) (Result, bool) {
	if r.CacheDir == "" {
		return Result{}, false
	}
	raw, err := os.ReadFile(r.cachePath(key))
	if err != nil {
		return Result{}, false
	}
	var e cacheEntry
	if err := json.Unmarshal(raw, &e); err != nil || e.Key != key || e.Result.Head != head || e.Result.Degraded {
		return Result{}, false
	}
	return e.Result, true
}

// storeCache writes atomically, so that a crash or a concurrent run never
// leaves a partial file where a later run looks.
func (r *Reviewer) storeCache(key string, res Result) error {
	if r.CacheDir == "" || res.Degraded {
		return nil
	}
	if err := os.MkdirAll(r.CacheDir, 0o700); err != nil {
		return err
	}
	raw, err := json.Marshal(cacheEntry{Key: key, Result: res})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(r.CacheDir, ".local-review-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), r.cachePath(key)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
