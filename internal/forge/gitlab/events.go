package gitlab

import (
	"context"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
)

// LabelEventIDBase is added to a resource label event's id to make its
// forge.Event.ID: label events and notes are numbered apart by GitLab, and
// converge's events share one id space.
const LabelEventIDBase int64 = 1 << 48

// systemEvents maps GitLab's system note texts to converge's event names
// (GitHub's issue event names where one fits). A note starting with a
// prefix is that event; the first match wins.
//
//	requested review from @U ...        review_requested
//	removed review request for @U ...   review_request_removed
//	approved this merge request         approved
//	unapproved this merge request       unapproved
//	requested changes                   changes_requested
//	added N commit(s) ...               committed
//	marked this merge request as **ready**   ready_for_review
//	marked this merge request as **draft**   convert_to_draft
//	resolved all threads                threads_resolved
//	changed the description             description_changed
//	closed / reopened / merged          closed / reopened / merged
//
// Labels come from resource_label_events, not system notes: add is
// labeled, remove unlabeled, with the label's name. Other system notes are
// no event.
var systemEvents = []struct {
	text, event string
	exact       bool // the whole body, not a prefix
}{
	{"requested review from ", "review_requested", false},
	{"removed review request for ", "review_request_removed", false},
	{sysApproved, "approved", true},
	{sysUnapproved, "unapproved", true},
	{sysRequestedChanges, "changes_requested", true},
	{"marked this merge request as **ready**", "ready_for_review", true},
	{"marked this merge request as **draft**", "convert_to_draft", true},
	{"resolved all threads", "threads_resolved", true},
	{"changed the description", "description_changed", true},
	{"closed", "closed", true},
	{"reopened", "reopened", true},
	{"merged", "merged", true},
}

var addedCommitsRE = regexp.MustCompile(`^added \d+ commits?\b`)

// SystemNoteEvent is the event name a system note's body stands for, ""
// for none (the table at systemEvents).
func SystemNoteEvent(body string) string {
	b := strings.TrimSpace(body)
	if addedCommitsRE.MatchString(b) {
		return "committed"
	}
	for _, e := range systemEvents {
		if b == e.text || (!e.exact && strings.HasPrefix(b, e.text)) {
			return e.event
		}
	}
	return ""
}

// DuoStartedEvent is the event IssueEvents reports for a note only a
// started GitLab Duo Code Review writes; the Duo review bot
// (internal/review/duo, StartedEvent) waits for it.
const DuoStartedEvent = "duo_review_started"

// DuoUsername is GitLab Duo Code Review's bot user on every GitLab
// (Options.DuoLogins names another).
const DuoUsername = "GitLabDuo"

// duoProgressText is in Duo's progress system note ("is reviewing your
// merge request and will let you know when it's finished").
const duoProgressText = "is reviewing your merge request"

func (c *Client) isDuo(login string) bool {
	for _, d := range c.duoLogins {
		if strings.EqualFold(d, login) {
			return true
		}
	}
	return false
}

// duoStarted says whether n is a note only a started Duo review writes:
// its progress system note, or any top-level note of its own (its older
// "Hey :wave: I'm starting to review…" progress note, its summary, its
// no-findings, nothing-to-review and error notes). The progress note is
// deleted when the review ends, so the notes after it prove the start
// too. Duo's diff notes and replies in threads are no start.
func (c *Client) duoStarted(n *note) bool {
	if !c.isDuo(n.Author.name()) {
		return false
	}
	if n.System {
		return strings.Contains(n.Body, duoProgressText)
	}
	return n.typ() == ""
}

// IssueEvents lists the MR's events, oldest first: its system notes (by
// SystemNoteEvent), its label events, and DuoStartedEvent for every note
// that proves a Duo review started (duoStarted).
func (c *Client) IssueEvents(ctx context.Context, ref forge.PRRef) ([]forge.Event, error) {
	const op = "list issue events"
	notes, _, err := getAll[note](ctx, c, mrPath(ref)+"/notes?sort=asc&order_by=created_at", 0)
	if err != nil {
		return nil, c.mapErr(op, err)
	}
	labels, _, err := getAll[labelEvent](ctx, c, mrPath(ref)+"/resource_label_events", 0)
	if err != nil {
		return nil, c.mapErr(op, err)
	}
	var out []forge.Event
	for i := range notes {
		n := &notes[i]
		if c.duoStarted(n) {
			out = append(out, forge.Event{ID: n.ID, Event: DuoStartedEvent, Actor: n.Author.name(), CreatedAt: n.CreatedAt})
			continue
		}
		if !n.System {
			continue
		}
		if ev := SystemNoteEvent(n.Body); ev != "" {
			out = append(out, forge.Event{ID: n.ID, Event: ev, Actor: n.Author.name(), CreatedAt: n.CreatedAt})
		}
	}
	for _, l := range labels {
		var ev string
		switch l.Action {
		case "add":
			ev = "labeled"
		case "remove":
			ev = "unlabeled"
		default:
			continue
		}
		e := forge.Event{ID: LabelEventIDBase + l.ID, Event: ev, Actor: l.User.name(), CreatedAt: l.CreatedAt}
		if l.Label != nil {
			e.Label = l.Label.Name
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// OpenMR is one open merge request as a project's list shows it: what
// `converge serve` needs to tell whether it is one to drive.
type OpenMR struct {
	Number int    // iid
	URL    string // web URL
	Author string
	Labels []string
}

// OpenMRs lists a project's open merge requests, every page. project is
// the full path ("group/sub/project").
func (c *Client) OpenMRs(ctx context.Context, projectFullPath string) ([]OpenMR, error) {
	type item struct {
		IID    int      `json:"iid"`
		WebURL string   `json:"web_url"`
		Author *user    `json:"author"`
		Labels []string `json:"labels"`
	}
	path := "projects/" + url.PathEscape(projectFullPath) + "/merge_requests?state=opened"
	items, _, err := getAll[item](ctx, c, path, 0)
	if err != nil {
		return nil, c.mapErr("list merge requests", err)
	}
	out := make([]OpenMR, 0, len(items))
	for _, it := range items {
		out = append(out, OpenMR{Number: it.IID, URL: it.WebURL, Author: it.Author.name(), Labels: it.Labels})
	}
	return out, nil
}
