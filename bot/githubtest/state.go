package githubtest

import "time"

// Repo is the fake's model of one repository. Tests set it up and read it
// through Server.Repo, which holds the server's lock; the handlers change it
// as GitHub would.
type Repo struct {
	Owner, Name   string
	DefaultBranch string
	// Installation is the GitHub App installation that may reach the
	// repository with its token; 0 lets every installation in.
	Installation int64
	// Files maps a commit SHA to the files at that commit, path → content.
	Files map[string]map[string]string
	// Pulls are the pull requests by number.
	Pulls map[int]*Pull
	// Permissions maps a user login to "admin", "maintain", "write",
	// "triage", "read" or "none"; a login not listed has "none".
	Permissions map[string]string
	// WorkflowInputs lists, by workflow file name, the inputs its
	// workflow_dispatch declares: a dispatch of that workflow with another
	// input is refused, as GitHub does. A workflow not listed takes any.
	WorkflowInputs map[string][]string

	Comments     []Comment
	Reactions    []Reaction
	Labels       map[string]Label // the repository's labels by name
	IssueLabels  map[int][]string // label names on each issue or pull request
	CheckRuns    []CheckRun       // in creation order
	Dispatches   []Dispatch       // workflow_dispatch events, in order
	WorkflowRuns []WorkflowRun    // runs the list endpoint returns; dispatches add one
	Cancelled    []int64          // workflow run ids cancelled, in order
	Statuses     []Status         // commit statuses, in order
}

// Status is a commit status.
type Status struct {
	SHA, State, Context, Description, TargetURL string
}

// Pull is a pull request.
type Pull struct {
	Number  int
	HeadSHA string
	HeadRef string
	// BaseSHA is its base branch's commit ("" leaves base.sha out).
	BaseSHA string
	// Files are the paths the pull request changes.
	Files []string
	Draft bool
	// State is "open" (the default when empty) or "closed".
	State string
	// Updated is its updated_at; zero means the time of the read.
	Updated time.Time
	// Fork is the full name of the fork its head comes from; "" for a
	// branch of the repository itself.
	Fork string
}

// Comment is an issue or pull-request comment.
type Comment struct {
	ID       int64
	Issue    int
	Body     string
	User     string
	UserType string // "User" or "Bot"
	Created  time.Time
	Updated  time.Time
}

// Reaction is a reaction to a comment.
type Reaction struct {
	CommentID int64
	Content   string
}

// Label is a repository label.
type Label struct {
	Name, Color, Description string
}

// CheckRun is a check run as last written.
type CheckRun struct {
	ID         int64
	Name       string
	HeadSHA    string
	ExternalID string
	Status     string
	Conclusion string
	Title      string
	Summary    string
	Text       string
	DetailsURL string
	// Updates counts the PATCH requests that changed it.
	Updates int
}

// Dispatch is one workflow_dispatch request.
type Dispatch struct {
	Workflow string
	Ref      string
	Inputs   map[string]any
	// RunID is the workflow run the dispatch started.
	RunID int64
}

// WorkflowRun is a workflow run the fake lists.
type WorkflowRun struct {
	ID           int64
	Workflow     string // the workflow file name or id it belongs to
	DisplayTitle string
	Status       string // "queued", "in_progress", "completed"
	Conclusion   string
	Event        string
}

func newRepo(owner, name string) *Repo {
	return &Repo{
		Owner: owner, Name: name, DefaultBranch: "main",
		Files:       map[string]map[string]string{},
		Pulls:       map[int]*Pull{},
		Permissions: map[string]string{},
		Labels:      map[string]Label{},
		IssueLabels: map[int][]string{},
	}
}
