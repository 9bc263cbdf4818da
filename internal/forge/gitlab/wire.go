package gitlab

import "time"

// Wire shapes of GitLab's REST v4 answers; only what forge types need.

type user struct {
	ID       int64  `json:"id"`
	Username string `json:"username"`
	Bot      bool   `json:"bot"`
	State    string `json:"state"`
}

func (u *user) name() string {
	if u == nil {
		return ""
	}
	return u.Username
}

type project struct {
	ID                int64  `json:"id"`
	PathWithNamespace string `json:"path_with_namespace"`
	HTTPURLToRepo     string `json:"http_url_to_repo"`
	WebURL            string `json:"web_url"`
	DefaultBranch     string `json:"default_branch"`
}

type mergeRequest struct {
	ID              int64  `json:"id"`
	IID             int    `json:"iid"`
	ProjectID       int64  `json:"project_id"`
	Title           string `json:"title"`
	Description     string `json:"description"`
	State           string `json:"state"`
	Draft           bool   `json:"draft"`
	WorkInProgress  bool   `json:"work_in_progress"`
	Author          *user  `json:"author"`
	SourceBranch    string `json:"source_branch"`
	TargetBranch    string `json:"target_branch"`
	SourceProjectID int64  `json:"source_project_id"`
	TargetProjectID int64  `json:"target_project_id"`
	SHA             string `json:"sha"`
	DiffRefs        *struct {
		BaseSHA  string `json:"base_sha"`
		HeadSHA  string `json:"head_sha"`
		StartSHA string `json:"start_sha"`
	} `json:"diff_refs"`
	DetailedMergeStatus string   `json:"detailed_merge_status"`
	HasConflicts        bool     `json:"has_conflicts"`
	Labels              []string `json:"labels"`
	Reviewers           []user   `json:"reviewers"`
	HeadPipeline        *struct {
		ID     int64  `json:"id"`
		SHA    string `json:"sha"`
		Status string `json:"status"`
		WebURL string `json:"web_url"`
	} `json:"head_pipeline"`
	WebURL string `json:"web_url"`
}

type position struct {
	BaseSHA      string `json:"base_sha"`
	StartSHA     string `json:"start_sha"`
	HeadSHA      string `json:"head_sha"`
	OldPath      string `json:"old_path"`
	NewPath      string `json:"new_path"`
	PositionType string `json:"position_type"`
	OldLine      *int   `json:"old_line"`
	NewLine      *int   `json:"new_line"`
	LineRange    *struct {
		Start struct {
			OldLine *int `json:"old_line"`
			NewLine *int `json:"new_line"`
		} `json:"start"`
		End struct {
			OldLine *int `json:"old_line"`
			NewLine *int `json:"new_line"`
		} `json:"end"`
	} `json:"line_range"`
}

func (p *position) path() string {
	if p.NewPath != "" {
		return p.NewPath
	}
	return p.OldPath
}

type note struct {
	ID         int64     `json:"id"`
	Type       *string   `json:"type"` // "DiffNote", "DiscussionNote", or null
	Body       string    `json:"body"`
	Author     *user     `json:"author"`
	CreatedAt  time.Time `json:"created_at"`
	System     bool      `json:"system"`
	Resolvable bool      `json:"resolvable"`
	Resolved   bool      `json:"resolved"`
	Position   *position `json:"position"`
}

func (n *note) typ() string {
	if n.Type == nil {
		return ""
	}
	return *n.Type
}

type discussion struct {
	ID             string `json:"id"`
	IndividualNote bool   `json:"individual_note"`
	Notes          []note `json:"notes"`
}

type commit struct {
	ID            string    `json:"id"`
	Message       string    `json:"message"`
	ParentIDs     []string  `json:"parent_ids"`
	CommittedDate time.Time `json:"committed_date"`
}

type version struct {
	ID             int64     `json:"id"`
	HeadCommitSHA  string    `json:"head_commit_sha"`
	BaseCommitSHA  string    `json:"base_commit_sha"`
	StartCommitSHA string    `json:"start_commit_sha"`
	CreatedAt      time.Time `json:"created_at"`
	State          string    `json:"state"`
}

type approvals struct {
	Approved   bool `json:"approved"`
	ApprovedBy []struct {
		User user `json:"user"`
	} `json:"approved_by"`
}

type reviewerState struct {
	User  user   `json:"user"`
	State string `json:"state"`
}

type commitStatus struct {
	ID           int64   `json:"id"`
	SHA          string  `json:"sha"`
	Name         string  `json:"name"`
	Status       string  `json:"status"`
	Description  *string `json:"description"`
	TargetURL    *string `json:"target_url"`
	AllowFailure bool    `json:"allow_failure"`
}

type labelEvent struct {
	ID        int64     `json:"id"`
	User      *user     `json:"user"`
	CreatedAt time.Time `json:"created_at"`
	Label     *struct {
		Name string `json:"name"`
	} `json:"label"`
	Action string `json:"action"`
}
