package prloop

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
)

// ReplyMarker is what a converge reply records about itself in a hidden
// HTML comment, so the forge itself says which replies exist (PR-S12,
// REL-2): a crash between replying and persisting is seen by the next
// observation instead of repeated.
type ReplyMarker struct {
	Thread      string
	Head        string
	Disposition Disposition
}

var markerRE = regexp.MustCompile(`<!--\s*converge:reply\s+thread=([^\s>]+)\s+head=([^\s>]+)\s+disposition=([A-Za-z-]+)\s*-->`)

// Marker renders the hidden marker that ends every converge reply.
func Marker(thread, head string, disposition Disposition) string {
	return fmt.Sprintf("<!-- converge:reply thread=%s head=%s disposition=%s -->",
		markerField(thread), markerField(head), markerField(string(disposition)))
}

// ParseMarkers returns the markers in body, in order.
func ParseMarkers(body string) []ReplyMarker {
	var out []ReplyMarker
	for _, m := range markerRE.FindAllStringSubmatch(body, -1) {
		out = append(out, ReplyMarker{Thread: m[1], Head: m[2], Disposition: Disposition(m[3])})
	}
	return out
}

// markerField keeps a value from breaking out of its marker field.
func markerField(v string) string {
	v = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '>' {
			return '_'
		}
		return r
	}, v)
	if v == "" {
		return "-"
	}
	return v
}

// defang keeps free text (a fixer's reason, which may echo comment text
// an attacker wrote) from forging a marker inside a reply converge signs.
func defang(s string) string {
	s = strings.ReplaceAll(s, "<!--", "&lt;!--")
	return strings.ReplaceAll(s, "-->", "--&gt;")
}

// selfComment reports whether a comment is converge's own. When the engine
// does not know its login every marker is believed: replying twice is the
// worse failure than trusting a marker that no one forged.
func selfComment(author string, c Config) bool {
	return c.self == "" || strings.EqualFold(author, c.self)
}

// threadMarkers returns the markers converge left in t about t itself,
// with the index of the comment that holds each.
func threadMarkers(t forge.Thread, c Config) []markerAt {
	var out []markerAt
	for i, cm := range t.Comments {
		if !selfComment(cm.Author, c) {
			continue
		}
		for _, m := range ParseMarkers(cm.Body) {
			if m.Thread == markerField(t.ID) {
				out = append(out, markerAt{ReplyMarker: m, Index: i})
			}
		}
	}
	return out
}

type markerAt struct {
	ReplyMarker
	Index int
}

// hasMarker reports whether converge already replied to t for (head,
// disp) since anyone else last spoke in it: a comment after converge's
// reply is answered again, once (PR-V6).
func hasMarker(t forge.Thread, head string, disp Disposition, c Config) bool {
	last := -1
	for i, cm := range t.Comments {
		if !selfComment(cm.Author, c) {
			last = i
		}
	}
	for _, m := range threadMarkers(t, c) {
		if m.Index > last && m.Head == markerField(head) && m.Disposition == disp {
			return true
		}
	}
	return false
}

// repliedAs reports whether converge ever replied to t with disp, on any
// head.
func repliedAs(t forge.Thread, disp Disposition, c Config) bool {
	for _, m := range threadMarkers(t, c) {
		if m.Disposition == disp {
			return true
		}
	}
	return false
}
