package githubtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// handler serves one operation. It runs with the server's lock held; r is
// the repository named in the path, or nil for operations outside one.
type handler func(s *Server, req *request, r *Repo) response

// handlers maps each operationId the fake implements to its handler.
var handlers = map[string]handler{
	"apps/create-installation-access-token":   createInstallationToken,
	"pulls/get":                               getPull,
	"pulls/list-files":                        listPullFiles,
	"repos/get-content":                       getContent,
	"repos/get-collaborator-permission-level": getPermission,
	"issues/list-comments":                    listComments,
	"issues/create-comment":                   createComment,
	"issues/update-comment":                   updateComment,
	"reactions/create-for-issue-comment":      createReaction,
	"issues/list-labels-on-issue":             listIssueLabels,
	"issues/add-labels":                       addLabels,
	"issues/remove-label":                     removeLabel,
	"issues/create-label":                     createLabel,
	"checks/create":                           createCheckRun,
	"checks/update":                           updateCheckRun,
	"checks/list-for-ref":                     listCheckRuns,
	"actions/create-workflow-dispatch":        createDispatch,
	"actions/list-workflow-runs":              listWorkflowRuns,
	"actions/cancel-workflow-run":             cancelWorkflowRun,
	"apps/get-authenticated":                  getApp,
	"users/get-authenticated":                 getUser,
	"repos/create-commit-status":              createStatus,
}

func getApp(_ *Server, _ *request, _ *Repo) response {
	return reply(http.StatusOK, map[string]any{"id": 1, "slug": AppSlug, "name": AppSlug, "node_id": "A_1",
		"owner": map[string]any{"login": "pairbench"}})
}

func getUser(s *Server, req *request, _ *Repo) response {
	if req.auth != AuthToken {
		return fail(http.StatusForbidden, "Resource not accessible by integration")
	}
	u := s.tokens[req.token]
	return reply(http.StatusOK, map[string]any{"login": u.Login, "type": u.Type, "id": 7})
}

func createStatus(_ *Server, req *request, r *Repo) response {
	var in struct {
		State       string `json:"state"`
		TargetURL   string `json:"target_url"`
		Description string `json:"description"`
		Context     string `json:"context"`
	}
	if err := json.Unmarshal(req.body, &in); err != nil {
		return refuse(http.StatusBadRequest, "status: %v", err)
	}
	if len(in.Description) > 140 {
		return fail(http.StatusUnprocessableEntity, "Validation Failed: description is too long (maximum is 140 characters)")
	}
	if in.Context == "" {
		in.Context = "default"
	}
	r.Statuses = append(r.Statuses, Status{SHA: req.params["sha"], State: in.State, Context: in.Context, Description: in.Description, TargetURL: in.TargetURL})
	return reply(http.StatusCreated, map[string]any{"state": in.State, "context": in.Context, "description": in.Description})
}

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

func createInstallationToken(s *Server, req *request, _ *Repo) response {
	inst, err := strconv.ParseInt(req.params["installation_id"], 10, 64)
	if err != nil {
		return fail(http.StatusNotFound, "Not Found")
	}
	tok := fmt.Sprintf("ghs_fake%d_%d", inst, s.id())
	s.installTokens[tok] = inst
	return reply(http.StatusCreated, map[string]any{
		"token":       tok,
		"expires_at":  s.now().Add(time.Hour).UTC().Format(time.RFC3339),
		"permissions": map[string]string{},
	})
}

func pullNumber(req *request, r *Repo) (*Pull, bool) {
	n, err := strconv.Atoi(req.params["pull_number"])
	p, ok := r.Pulls[n]
	return p, err == nil && ok
}

func repoJSON(r *Repo) map[string]any {
	return map[string]any{
		"name": r.Name, "full_name": r.Owner + "/" + r.Name, "fork": false,
		"default_branch": r.DefaultBranch, "owner": map[string]any{"login": r.Owner},
	}
}

func getPull(s *Server, req *request, r *Repo) response {
	p, ok := pullNumber(req, r)
	if !ok {
		return fail(http.StatusNotFound, "Not Found")
	}
	state := p.State
	if state == "" {
		state = "open"
	}
	updated := p.Updated
	if updated.IsZero() {
		updated = s.now()
	}
	headRepo := repoJSON(r)
	if p.Fork != "" {
		owner, name, _ := strings.Cut(p.Fork, "/")
		headRepo = map[string]any{"name": name, "full_name": p.Fork, "fork": true, "owner": map[string]any{"login": owner}}
	}
	base := map[string]any{"ref": r.DefaultBranch, "repo": repoJSON(r)}
	if p.BaseSHA != "" {
		base["sha"] = p.BaseSHA
	}
	return reply(http.StatusOK, map[string]any{
		"number": p.Number, "state": state, "draft": p.Draft, "updated_at": updated.UTC().Format(time.RFC3339),
		"head": map[string]any{"sha": p.HeadSHA, "ref": p.HeadRef, "repo": headRepo}, "base": base,
	})
}

func listPullFiles(_ *Server, req *request, r *Repo) response {
	p, ok := pullNumber(req, r)
	if !ok {
		return fail(http.StatusNotFound, "Not Found")
	}
	files := make([]any, len(p.Files))
	for i, f := range p.Files {
		files[i] = map[string]any{"filename": f, "status": "modified", "sha": fmt.Sprintf("%040x", i)}
	}
	return paginate(req, files)
}

func getContent(_ *Server, req *request, r *Repo) response {
	ref := req.URL.Query().Get("ref")
	if ref == "" {
		ref = r.DefaultBranch
	}
	files, ok := r.Files[ref]
	if !ok {
		return fail(http.StatusNotFound, "No commit found for the ref %s", ref)
	}
	p := strings.Trim(req.params["path"], "/")
	if content, ok := files[p]; ok {
		return reply(http.StatusOK, map[string]any{
			"type": "file", "encoding": "base64", "name": path.Base(p), "path": p,
			"size": len(content), "sha": fmt.Sprintf("%040x", len(content)),
			"content": base64.StdEncoding.EncodeToString([]byte(content)),
		})
	}
	seen := map[string]string{}
	for f := range files {
		rest, ok := strings.CutPrefix(f, p+"/")
		if !ok {
			continue
		}
		name, _, isDir := strings.Cut(rest, "/")
		seen[name] = map[bool]string{true: "dir", false: "file"}[isDir]
	}
	if len(seen) == 0 {
		return fail(http.StatusNotFound, "Not Found")
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	entries := make([]any, len(names))
	for i, n := range names {
		entries[i] = map[string]any{"type": seen[n], "name": n, "path": path.Join(p, n)}
	}
	return reply(http.StatusOK, entries)
}

func getPermission(_ *Server, req *request, r *Repo) response {
	u := req.params["username"]
	perm := r.Permissions[u]
	if perm == "" {
		perm = "none"
	}
	// The API reports maintain as write and triage as read.
	legacy := map[string]string{"maintain": "write", "triage": "read"}[perm]
	if legacy == "" {
		legacy = perm
	}
	return reply(http.StatusOK, map[string]any{"permission": legacy, "role_name": perm, "user": map[string]any{"login": u}})
}

func commentJSON(c Comment) map[string]any {
	return map[string]any{
		"id": c.ID, "body": c.Body, "user": map[string]any{"login": c.User, "type": c.UserType},
		"created_at": c.Created.UTC().Format(time.RFC3339), "updated_at": c.Updated.UTC().Format(time.RFC3339),
	}
}

func listComments(_ *Server, req *request, r *Repo) response {
	n, _ := strconv.Atoi(req.params["issue_number"])
	var out []any
	for _, c := range r.Comments {
		if c.Issue == n {
			out = append(out, commentJSON(c))
		}
	}
	return paginate(req, out)
}

// author is who writes as the request's credentials, and the account's type.
func author(s *Server, req *request) (login, typ string) {
	if req.auth == AuthInstallation {
		return AppSlug + "[bot]", "Bot"
	}
	u := s.tokens[req.token]
	return u.Login, u.Type
}

func createComment(s *Server, req *request, r *Repo) response {
	var in struct {
		Body string `json:"body"`
	}
	if err := json.Unmarshal(req.body, &in); err != nil {
		return refuse(http.StatusBadRequest, "body: %v", err)
	}
	n, _ := strconv.Atoi(req.params["issue_number"])
	now := s.now()
	login, typ := author(s, req)
	c := Comment{ID: s.id(), Issue: n, Body: in.Body, User: login, UserType: typ, Created: now, Updated: now}
	if len(c.Body) > 65536 {
		return fail(http.StatusUnprocessableEntity, "Validation Failed: body is too long (maximum is 65536 characters)")
	}
	r.Comments = append(r.Comments, c)
	return reply(http.StatusCreated, commentJSON(c))
}

func updateComment(s *Server, req *request, r *Repo) response {
	var in struct {
		Body string `json:"body"`
	}
	if err := json.Unmarshal(req.body, &in); err != nil {
		return refuse(http.StatusBadRequest, "body: %v", err)
	}
	if len(in.Body) > 65536 {
		return fail(http.StatusUnprocessableEntity, "Validation Failed: body is too long (maximum is 65536 characters)")
	}
	id, _ := strconv.ParseInt(req.params["comment_id"], 10, 64)
	for i := range r.Comments {
		if r.Comments[i].ID == id {
			if login, _ := author(s, req); r.Comments[i].User != login {
				return refuse(http.StatusForbidden, "comment %d is %s's, not %s's", id, r.Comments[i].User, login)
			}
			r.Comments[i].Body = in.Body
			r.Comments[i].Updated = s.now()
			return reply(http.StatusOK, commentJSON(r.Comments[i]))
		}
	}
	return fail(http.StatusNotFound, "Not Found")
}

func createReaction(s *Server, req *request, r *Repo) response {
	var in struct {
		Content string `json:"content"`
	}
	_ = json.Unmarshal(req.body, &in)
	id, _ := strconv.ParseInt(req.params["comment_id"], 10, 64)
	r.Reactions = append(r.Reactions, Reaction{CommentID: id, Content: in.Content})
	return reply(http.StatusCreated, map[string]any{"id": s.id(), "content": in.Content})
}

func labelsJSON(r *Repo, names []string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = map[string]any{"name": n, "color": r.Labels[n].Color}
	}
	return out
}

func listIssueLabels(_ *Server, req *request, r *Repo) response {
	n, _ := strconv.Atoi(req.params["issue_number"])
	return paginate(req, labelsJSON(r, r.IssueLabels[n]))
}

func addLabels(_ *Server, req *request, r *Repo) response {
	var names []string
	if err := json.Unmarshal(req.body, &names); err != nil {
		var obj struct {
			Labels []string `json:"labels"`
		}
		if err := json.Unmarshal(req.body, &obj); err != nil {
			return refuse(http.StatusBadRequest, "labels: %v", err)
		}
		names = obj.Labels
	}
	n, _ := strconv.Atoi(req.params["issue_number"])
	for _, name := range names {
		if _, ok := r.Labels[name]; !ok {
			r.Labels[name] = Label{Name: name, Color: "ededed"} // GitHub's default
		}
		if !slices.Contains(r.IssueLabels[n], name) {
			r.IssueLabels[n] = append(r.IssueLabels[n], name)
		}
	}
	return reply(http.StatusOK, labelsJSON(r, r.IssueLabels[n]))
}

func removeLabel(_ *Server, req *request, r *Repo) response {
	n, _ := strconv.Atoi(req.params["issue_number"])
	name := req.params["name"]
	i := slices.Index(r.IssueLabels[n], name)
	if i < 0 {
		return fail(http.StatusNotFound, "Label does not exist")
	}
	r.IssueLabels[n] = slices.Delete(r.IssueLabels[n], i, i+1)
	return reply(http.StatusOK, labelsJSON(r, r.IssueLabels[n]))
}

func createLabel(_ *Server, req *request, r *Repo) response {
	var in Label
	var raw struct {
		Name        string `json:"name"`
		Color       string `json:"color"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal(req.body, &raw); err != nil {
		return refuse(http.StatusBadRequest, "label: %v", err)
	}
	in = Label{Name: raw.Name, Color: raw.Color, Description: raw.Description}
	if _, ok := r.Labels[in.Name]; ok {
		return reply(http.StatusUnprocessableEntity, map[string]any{
			"message": "Validation Failed",
			"errors":  []any{map[string]any{"resource": "Label", "code": "already_exists", "field": "name"}},
		})
	}
	r.Labels[in.Name] = in
	return reply(http.StatusCreated, map[string]any{"name": in.Name, "color": in.Color, "description": in.Description})
}

// checkRunInput is the body of checks/create and checks/update.
type checkRunInput struct {
	Name       *string `json:"name"`
	HeadSHA    *string `json:"head_sha"`
	ExternalID *string `json:"external_id"`
	Status     *string `json:"status"`
	Conclusion *string `json:"conclusion"`
	DetailsURL *string `json:"details_url"`
	Output     *struct {
		Title   string `json:"title"`
		Summary string `json:"summary"`
		Text    string `json:"text"`
	} `json:"output"`
}

func (in checkRunInput) apply(c *CheckRun) {
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	set(&c.Name, in.Name)
	set(&c.HeadSHA, in.HeadSHA)
	set(&c.ExternalID, in.ExternalID)
	set(&c.Status, in.Status)
	set(&c.Conclusion, in.Conclusion)
	set(&c.DetailsURL, in.DetailsURL)
	if in.Conclusion != nil {
		c.Status = "completed"
	}
	if in.Output != nil {
		c.Title, c.Summary, c.Text = in.Output.Title, in.Output.Summary, in.Output.Text
	}
}

func checkRunJSON(c CheckRun) map[string]any {
	return map[string]any{
		"id": c.ID, "name": c.Name, "head_sha": c.HeadSHA, "external_id": c.ExternalID,
		"status": c.Status, "conclusion": nilIfEmpty(c.Conclusion), "details_url": c.DetailsURL,
		"output": map[string]any{"title": c.Title, "summary": c.Summary, "text": c.Text},
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func createCheckRun(s *Server, req *request, r *Repo) response {
	var in checkRunInput
	if err := json.Unmarshal(req.body, &in); err != nil {
		return refuse(http.StatusBadRequest, "check run: %v", err)
	}
	c := CheckRun{ID: s.id(), Status: "queued"}
	in.apply(&c)
	r.CheckRuns = append(r.CheckRuns, c)
	return reply(http.StatusCreated, checkRunJSON(c))
}

func updateCheckRun(_ *Server, req *request, r *Repo) response {
	var in checkRunInput
	if err := json.Unmarshal(req.body, &in); err != nil {
		return refuse(http.StatusBadRequest, "check run: %v", err)
	}
	id, _ := strconv.ParseInt(req.params["check_run_id"], 10, 64)
	for i := range r.CheckRuns {
		if c := &r.CheckRuns[i]; c.ID == id {
			if c.Status == "completed" && in.Status != nil && *in.Status != "completed" {
				return fail(http.StatusUnprocessableEntity, "check run %d is already completed", id)
			}
			in.apply(c)
			c.Updates++
			return reply(http.StatusOK, checkRunJSON(*c))
		}
	}
	return fail(http.StatusNotFound, "Not Found")
}

func listCheckRuns(_ *Server, req *request, r *Repo) response {
	ref := req.params["ref"]
	name := req.URL.Query().Get("check_name")
	var out []any
	for _, c := range r.CheckRuns {
		if c.HeadSHA == ref && (name == "" || c.Name == name) {
			out = append(out, checkRunJSON(c))
		}
	}
	return reply(http.StatusOK, map[string]any{"total_count": len(out), "check_runs": orEmpty(out)})
}

func orEmpty(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}

func createDispatch(s *Server, req *request, r *Repo) response {
	var in struct {
		Ref              string         `json:"ref"`
		Inputs           map[string]any `json:"inputs"`
		ReturnRunDetails bool           `json:"return_run_details"`
	}
	if err := json.Unmarshal(req.body, &in); err != nil {
		return refuse(http.StatusBadRequest, "dispatch: %v", err)
	}
	wf := req.params["workflow_id"]
	if _, ok := r.Files[in.Ref][".github/workflows/"+wf]; !ok {
		return fail(http.StatusNotFound, "Not Found: no workflow %s on %s", wf, in.Ref)
	}
	if len(in.Inputs) > 25 {
		return fail(http.StatusUnprocessableEntity, "you can only pass up to 25 inputs")
	}
	if declared, ok := r.WorkflowInputs[wf]; ok {
		var unexpected []string
		for k := range in.Inputs {
			if !slices.Contains(declared, k) {
				unexpected = append(unexpected, strconv.Quote(k))
			}
		}
		if len(unexpected) > 0 {
			sort.Strings(unexpected)
			return fail(http.StatusUnprocessableEntity, "Unexpected inputs provided: [%s]", strings.Join(unexpected, ", "))
		}
	}
	// The run is named as the workflow's run-name says; the example's is
	// "pairbench <run id>", and "pairbench <run id>+<top_up>" for a top-up.
	id := s.id()
	title := "pairbench"
	if v, ok := in.Inputs["run_id"].(string); ok {
		title += " " + v
	}
	if v, ok := in.Inputs["top_up"].(string); ok && v != "" {
		title += "+" + v
	}
	r.Dispatches = append(r.Dispatches, Dispatch{Workflow: wf, Ref: in.Ref, Inputs: in.Inputs, RunID: id})
	r.WorkflowRuns = append(r.WorkflowRuns, WorkflowRun{ID: id, Workflow: wf, DisplayTitle: title, Status: "queued", Event: "workflow_dispatch"})
	if !in.ReturnRunDetails {
		return reply(http.StatusNoContent, nil)
	}
	url := fmt.Sprintf("https://github.com/%s/%s/actions/runs/%d", r.Owner, r.Name, id)
	return reply(http.StatusOK, map[string]any{"workflow_run_id": id, "run_url": url, "html_url": url})
}

// WorkflowRun returns the workflow run id, or false.
func (s *Server) WorkflowRun(fullName string, id int64) (WorkflowRun, bool) {
	var out WorkflowRun
	found := false
	s.Repo(fullName, func(r *Repo) {
		for _, w := range r.WorkflowRuns {
			if w.ID == id {
				out, found = w, true
			}
		}
	})
	return out, found
}

// CompleteWorkflowRun marks a workflow run completed with conclusion, as
// the runner would; false if there is no such run or it already ended.
func (s *Server) CompleteWorkflowRun(fullName string, id int64, conclusion string) bool {
	done := false
	s.Repo(fullName, func(r *Repo) {
		for i := range r.WorkflowRuns {
			if w := &r.WorkflowRuns[i]; w.ID == id && w.Status != "completed" {
				w.Status, w.Conclusion, done = "completed", conclusion, true
			}
		}
	})
	return done
}

func listWorkflowRuns(_ *Server, req *request, r *Repo) response {
	wf := req.params["workflow_id"]
	var out []any
	for _, w := range r.WorkflowRuns {
		if w.Workflow == wf {
			out = append(out, map[string]any{
				"id": w.ID, "display_title": w.DisplayTitle, "status": w.Status,
				"conclusion": nilIfEmpty(w.Conclusion), "event": w.Event,
			})
		}
	}
	return reply(http.StatusOK, map[string]any{"total_count": len(out), "workflow_runs": orEmpty(out)})
}

func cancelWorkflowRun(_ *Server, req *request, r *Repo) response {
	id, _ := strconv.ParseInt(req.params["run_id"], 10, 64)
	for i := range r.WorkflowRuns {
		if w := &r.WorkflowRuns[i]; w.ID == id {
			if w.Status == "completed" {
				return fail(http.StatusConflict, "Cannot cancel a workflow run that is completed.")
			}
			w.Status, w.Conclusion = "completed", "cancelled"
			r.Cancelled = append(r.Cancelled, id)
			return reply(http.StatusAccepted, map[string]any{})
		}
	}
	return fail(http.StatusNotFound, "Not Found")
}

// paginate answers one page of items, with GitHub's Link header.
func paginate(req *request, items []any) response {
	q := req.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 || per > 100 {
		per = 30
	}
	page, _ := strconv.Atoi(q.Get("page"))
	if page <= 0 {
		page = 1
	}
	start := min((page-1)*per, len(items))
	end := min(start+per, len(items))
	resp := reply(http.StatusOK, orEmpty(items[start:end]))
	if end < len(items) {
		last := (len(items) + per - 1) / per
		link := func(p int) string {
			q.Set("page", strconv.Itoa(p))
			q.Set("per_page", strconv.Itoa(per))
			return fmt.Sprintf("<http://%s%s?%s>", req.Host, req.URL.Path, q.Encode())
		}
		resp.header = http.Header{"Link": {link(page+1) + `; rel="next", ` + link(last) + `; rel="last"`}}
	}
	return resp
}
