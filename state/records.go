package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"
)

// ErrNotFound is returned (wrapped) for a record that does not exist.
var ErrNotFound = errors.New("state: not found")

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Delivery is a webhook delivery the service accepted.
type Delivery struct {
	Installation int64
	ID           string // X-GitHub-Delivery
	Event        string
	Payload      []byte
	ReceivedAt   time.Time
	Handled      bool
}

// DeliveryJob is the job that handles one accepted delivery.
type DeliveryJob struct {
	Installation int64  `json:"installation"`
	ID           string `json:"id"`
}

// Kind is the job's kind for River.
func (DeliveryJob) Kind() string { return "delivery" }

// Accept stores a delivery and its DeliveryJob in one transaction, and
// returns once both are committed (on SQLite, fsynced). It returns false for
// a delivery already accepted, keyed by (installation, id): GitHub's
// redeliveries keep the delivery id. Deliveries accepted at the same moment
// share one commit (see acceptLoop).
func (s *Store) Accept(ctx context.Context, d Delivery) (accepted bool, err error) {
	req := acceptReq{d: d, done: make(chan acceptRes, 1)}
	select {
	case s.accepts <- req:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	select {
	case r := <-req.done:
		return r.accepted, r.err
	case <-ctx.Done():
		// It may still commit; a redelivery is then a duplicate.
		return false, ctx.Err()
	}
}

type acceptReq struct {
	d    Delivery
	done chan acceptRes
}

type acceptRes struct {
	accepted bool
	err      error
}

// maxAcceptBatch bounds the deliveries of one commit.
const maxAcceptBatch = 128

// acceptLoop commits the deliveries waiting to be accepted together: one
// transaction (one fsync, one round trip of each kind) for all that arrived
// while the previous commit ran. It runs until stop is closed.
func (s *Store) acceptLoop(stop <-chan struct{}) {
	for {
		var batch []acceptReq
		select {
		case r := <-s.accepts:
			batch = append(batch, r)
		case <-stop:
			return
		}
	more:
		for len(batch) < maxAcceptBatch {
			select {
			case r := <-s.accepts:
				batch = append(batch, r)
			default:
				break more
			}
		}
		accepted, err := s.acceptBatch(batch)
		for i, r := range batch {
			r.done <- acceptRes{accepted: err == nil && accepted[i], err: err}
		}
	}
}

func (s *Store) acceptBatch(batch []acceptReq) ([]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	accepted := make([]bool, len(batch))
	err := s.db.acceptTx(ctx, func(tx *Tx) error {
		var q strings.Builder
		q.WriteString(`INSERT INTO pb_deliveries (installation, id, event, payload, received_at) VALUES `)
		args := make([]any, 0, 5*len(batch))
		for i, r := range batch {
			if i > 0 {
				q.WriteString(", ")
			}
			n := len(args)
			fmt.Fprintf(&q, "($%d, $%d, $%d, $%d, $%d)", n+1, n+2, n+3, n+4, n+5)
			args = append(args, r.d.Installation, r.d.ID, r.d.Event, r.d.Payload, ms(tx.now))
		}
		q.WriteString(` ON CONFLICT (installation, id) DO NOTHING RETURNING installation, id`)
		inserted := map[[2]string]bool{}
		if err := tx.q.query(ctx, q.String(), args, func(scan func(...any) error) error {
			var inst int64
			var id string
			if err := scan(&inst, &id); err != nil {
				return err
			}
			inserted[[2]string{fmt.Sprint(inst), id}] = true
			return nil
		}); err != nil {
			return fmt.Errorf("state: store deliveries: %w", err)
		}
		var jobs []river.InsertManyParams
		for i, r := range batch {
			key := [2]string{fmt.Sprint(r.d.Installation), r.d.ID}
			if inserted[key] {
				accepted[i] = true
				delete(inserted, key) // a second copy in the batch is a duplicate
				jobs = append(jobs, river.InsertManyParams{Args: DeliveryJob{Installation: r.d.Installation, ID: r.d.ID}})
			}
		}
		if len(jobs) == 0 {
			return nil
		}
		return tx.insertFast(ctx, jobs)
	})
	return accepted, err
}

// Delivery reads an accepted delivery.
func (tx *Tx) Delivery(ctx context.Context, installation int64, id string) (Delivery, error) {
	d := Delivery{Installation: installation, ID: id}
	var received, handled int64
	err := tx.q.queryRow(ctx, `SELECT event, payload, received_at, handled_at FROM pb_deliveries WHERE installation = $1 AND id = $2`,
		[]any{installation, id}, &d.Event, &d.Payload, &received, &handled)
	if errors.Is(err, errNoRows) {
		return d, fmt.Errorf("delivery %s of installation %d: %w", id, installation, ErrNotFound)
	}
	d.ReceivedAt, d.Handled = fromMS(received), handled != 0
	return d, err
}

// MarkHandled records that a delivery's decision was made. It returns false
// if it already was: whatever followed from it is already stored, so a
// delivery job that runs again (after a crash) does nothing twice.
func (tx *Tx) MarkHandled(ctx context.Context, installation int64, id string) (first bool, err error) {
	n, err := tx.q.exec(ctx, `UPDATE pb_deliveries SET handled_at = $1 WHERE installation = $2 AND id = $3 AND handled_at = 0`,
		ms(tx.now), installation, id)
	return n == 1, err
}

// ForgetDeliveries deletes the deliveries received before t (GitHub
// offers redelivery for three days, so older ones cannot come back), and
// the records of commands carried out before t (RecordCommand).
func (tx *Tx) ForgetDeliveries(ctx context.Context, before time.Time) (int64, error) {
	if _, err := tx.q.exec(ctx, `DELETE FROM pb_commands WHERE at < $1`, ms(before)); err != nil {
		return 0, err
	}
	return tx.q.exec(ctx, `DELETE FROM pb_deliveries WHERE received_at < $1 AND handled_at <> 0`, ms(before))
}

// RecordCommand notes that the /bench command of comment id in repo is
// carried out, and reports whether it was the first time: a delivery of
// the comment replayed (an operator's redelivery, under another delivery
// id) is then not carried out again.
func (tx *Tx) RecordCommand(ctx context.Context, repo string, commentID int64) (bool, error) {
	n, err := tx.q.exec(ctx, `INSERT INTO pb_commands (repo, comment_id, at) VALUES ($1, $2, $3)
		ON CONFLICT (repo, comment_id) DO NOTHING`, repo, commentID, ms(tx.now))
	return n == 1, err
}

// Pull is what the service knows of a pull request.
type Pull struct {
	Repo          string // owner/name
	PR            int
	Installation  int64
	DefaultBranch string
	// HeadSHA is the newest head commit the service was told of, its head
	// since HeadSince (when GitHub last updated the pull request then).
	HeadSHA   string
	HeadSince time.Time
	Closed    bool
	// Bench is the run id of the bench running for the pull request, "" if
	// none: at most one runs at a time.
	Bench string
	// StickyID is the rollup comment's id, 0 before it exists.
	StickyID int64
	// ApprovalID is the comment asking a maintainer to approve ApprovalSHA,
	// with ApprovalBody its text ("" when no approval is asked for).
	ApprovalID   int64
	ApprovalSHA  string
	ApprovalBody string
	// ApprovalPosted is the approval text last posted, StickyHash a hash of
	// the rollup last posted: what is already shown is not written again.
	ApprovalPosted, StickyHash string
	// Label is the "bench: " label last set.
	Label string
	// SurfaceVersion counts changes to what the pull request should show
	// (comment, label); SurfacePosted is the version last shown.
	SurfaceVersion, SurfacePosted int64
}

const pullColumns = `repo, pr, installation, default_branch, head_sha, head_since, closed, bench, sticky_id, approval_id, approval_sha,
	approval_body, approval_posted, sticky_hash, label, surface_version, surface_posted`

func scanPull(scan func(...any) error) (Pull, error) {
	var p Pull
	var pr, since, closed int64
	err := scan(&p.Repo, &pr, &p.Installation, &p.DefaultBranch, &p.HeadSHA, &since, &closed, &p.Bench, &p.StickyID, &p.ApprovalID,
		&p.ApprovalSHA, &p.ApprovalBody, &p.ApprovalPosted, &p.StickyHash, &p.Label, &p.SurfaceVersion, &p.SurfacePosted)
	p.PR, p.Closed, p.HeadSince = int(pr), closed != 0, fromMS(since)
	return p, err
}

// LockPull reads a pull request, creating its record if new, and holds it
// until the transaction ends: deliveries about one pull request are decided
// one after the other, on every replica.
func (tx *Tx) LockPull(ctx context.Context, repo string, pr int) (Pull, error) {
	if _, err := tx.q.exec(ctx, `INSERT INTO pb_pulls (repo, pr) VALUES ($1, $2) ON CONFLICT (repo, pr) DO NOTHING`, repo, pr); err != nil {
		return Pull{}, fmt.Errorf("state: pull %s#%d: %w", repo, pr, err)
	}
	// An UPDATE takes the row lock (Postgres) or the write lock (SQLite).
	if _, err := tx.q.exec(ctx, `UPDATE pb_pulls SET updated_at = $1 WHERE repo = $2 AND pr = $3`, ms(tx.now), repo, pr); err != nil {
		return Pull{}, fmt.Errorf("state: lock pull %s#%d: %w", repo, pr, err)
	}
	p, found, err := tx.Pull(ctx, repo, pr)
	if err == nil && !found {
		err = fmt.Errorf("pull %s#%d: %w", repo, pr, ErrNotFound)
	}
	return p, err
}

// Pull reads a pull request; found is false if the service never heard of it.
func (tx *Tx) Pull(ctx context.Context, repo string, pr int) (p Pull, found bool, err error) {
	err = tx.q.query(ctx, `SELECT `+pullColumns+` FROM pb_pulls WHERE repo = $1 AND pr = $2`, []any{repo, pr},
		func(scan func(...any) error) error {
			p, err = scanPull(scan)
			found = true
			return err
		})
	if err != nil {
		return Pull{}, false, fmt.Errorf("state: pull %s#%d: %w", repo, pr, err)
	}
	return p, found, nil
}

// SavePull writes back a pull request read in this transaction.
func (tx *Tx) SavePull(ctx context.Context, p Pull) error {
	_, err := tx.q.exec(ctx, `UPDATE pb_pulls SET installation = $1, default_branch = $2, head_sha = $3, closed = $4, bench = $5,
		sticky_id = $6, approval_id = $7, approval_sha = $8, approval_body = $9, label = $10, surface_version = $11,
		surface_posted = $12, updated_at = $13, head_since = $14, approval_posted = $15, sticky_hash = $16
		WHERE repo = $17 AND pr = $18`,
		p.Installation, p.DefaultBranch, p.HeadSHA, b2i(p.Closed), p.Bench, p.StickyID, p.ApprovalID, p.ApprovalSHA, p.ApprovalBody,
		p.Label, p.SurfaceVersion, p.SurfacePosted, ms(tx.now), ms(p.HeadSince), p.ApprovalPosted, p.StickyHash, p.Repo, p.PR)
	if err != nil {
		return fmt.Errorf("state: save pull %s#%d: %w", p.Repo, p.PR, err)
	}
	return nil
}

// Bench states.
const (
	BenchQueued    = "queued"    // recorded; not yet started by its backend
	BenchRunning   = "running"   // started by its backend
	BenchDone      = "done"      // ended with a verdict
	BenchFailed    = "failed"    // ended without one; Reason says why
	BenchCancelled = "cancelled" // stopped: superseded, cancelled, closed; Reason says why
)

// Bench is one bench run.
type Bench struct {
	Run           string // the run id
	Repo          string
	PR            int
	Installation  int64
	SHA           string
	DefaultBranch string
	Backend       string // "local" or "actions"
	Domains       []string
	Intents       []string
	Pairs         int
	Model         string
	Agent         string // "" for the backend's default
	RequestedBy   string // "" for an automatic bench
	State         string
	Reason        string // why it failed or was cancelled
	Verdict       string // the report's verdict, once done
	Created       time.Time
	Ended         time.Time
	// CheckID is the GitHub check run's id (0 before it is created, and in
	// token mode, which posts commit statuses). CheckVersion counts changes
	// to what the check should show; CheckPosted is the version shown.
	CheckID                   int64
	CheckVersion, CheckPosted int64
	// WorkflowRunID is the Actions run the service dispatched; only its
	// workflow_run event may end the bench.
	WorkflowRunID  int64
	WorkflowRunURL string
	Dispatched     time.Time
	// JobID is the local backend's job running the bench.
	JobID int64
	// DonePairs of TotalPairs are done, of the pairs in force (in a run of
	// looks, those of the look under way), as the local backend reports.
	DonePairs  int
	TotalPairs int
	// Look is the look under way of Looks, from 1, in a run of looks
	// (the local backend's); 0 for a run without looks, and before its
	// pairs start. PlannedPairs counts the pairs of every look.
	Look, Looks, PlannedPairs int
	// StopLook is the look the run stopped at before its last, StopKind
	// why (efficacy or futility) and StopReason the reason in words; 0 and
	// "" while it goes on, and for a run that went through its looks.
	StopLook   int
	StopKind   string
	StopReason string
	// Base is the pull request's base commit: the bench benches what the
	// pull request changed, each domain as config.Comparisons chooses
	// (tools changed: against Base's tools). "" benches every domain
	// against no tools, as benches recorded before schema 4 do.
	Base string
	// FailOn is what fails the bench's check run (.pairbench.yml's
	// fail_on, comma-separated labels and "worse"); "" lets the verdict
	// decide, as for benches recorded before schema 5.
	FailOn string
	// TopUps counts the times /bench more topped the run up with more
	// pairs: each reopened the ended bench, with a check run of its own.
	TopUps int
}

// Over reports whether the bench has ended.
func (b Bench) Over() bool {
	return b.State == BenchDone || b.State == BenchFailed || b.State == BenchCancelled
}

const benchColumns = `run, repo, pr, installation, sha, default_branch, backend, domains, intents, pairs, model, requested_by, state,
	reason, verdict, created_at, ended_at, check_id, check_version, check_posted, workflow_run_id, workflow_run_url, dispatched_at,
	job_id, done_pairs, total_pairs, agent, base_sha, fail_on, top_ups, look, looks, planned_pairs, stop_look, stop_kind, stop_reason`

func scanBench(scan func(...any) error) (Bench, error) {
	var b Bench
	var pr, pairs, created, ended, dispatched, done, total, topUps, look, looks, planned, stopLook int64
	var domains, intents string
	err := scan(&b.Run, &b.Repo, &pr, &b.Installation, &b.SHA, &b.DefaultBranch, &b.Backend, &domains, &intents, &pairs, &b.Model,
		&b.RequestedBy, &b.State, &b.Reason, &b.Verdict, &created, &ended, &b.CheckID, &b.CheckVersion, &b.CheckPosted,
		&b.WorkflowRunID, &b.WorkflowRunURL, &dispatched, &b.JobID, &done, &total, &b.Agent, &b.Base, &b.FailOn, &topUps,
		&look, &looks, &planned, &stopLook, &b.StopKind, &b.StopReason)
	if err != nil {
		return b, err
	}
	b.PR, b.Pairs, b.DonePairs, b.TotalPairs, b.TopUps = int(pr), int(pairs), int(done), int(total), int(topUps)
	b.Look, b.Looks, b.PlannedPairs, b.StopLook = int(look), int(looks), int(planned), int(stopLook)
	b.Created, b.Ended, b.Dispatched = fromMS(created), fromMS(ended), fromMS(dispatched)
	b.Domains, b.Intents = splitList(domains), splitList(intents)
	return b, nil
}

// joinList stores a list as a JSON array, "" for an empty one; splitList
// reads it back.
func joinList(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	b, _ := json.Marshal(xs) // strings always marshal
	return string(b)
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	var xs []string
	if json.Unmarshal([]byte(s), &xs) != nil {
		return strings.Split(s, ",")
	}
	return xs
}

func benchArgs(b Bench) []any {
	return []any{b.Run, b.Repo, b.PR, b.Installation, b.SHA, b.DefaultBranch, b.Backend, joinList(b.Domains), joinList(b.Intents),
		b.Pairs, b.Model, b.RequestedBy, b.State, b.Reason, b.Verdict, ms(b.Created), ms(b.Ended), b.CheckID, b.CheckVersion,
		b.CheckPosted, b.WorkflowRunID, b.WorkflowRunURL, ms(b.Dispatched), b.JobID, b.DonePairs, b.TotalPairs, b.Agent, b.Base, b.FailOn, b.TopUps,
		b.Look, b.Looks, b.PlannedPairs, b.StopLook, b.StopKind, b.StopReason}
}

// InsertBench records a new bench.
func (tx *Tx) InsertBench(ctx context.Context, b Bench) error {
	_, err := tx.q.exec(ctx, `INSERT INTO pb_benches (`+benchColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
		$14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36)`, benchArgs(b)...)
	if err != nil {
		return fmt.Errorf("state: insert bench %s: %w", b.Run, err)
	}
	return nil
}

// SaveBench writes back a bench read in this transaction.
func (tx *Tx) SaveBench(ctx context.Context, b Bench) error {
	args := benchArgs(b)
	_, err := tx.q.exec(ctx, `UPDATE pb_benches SET repo = $2, pr = $3, installation = $4, sha = $5, default_branch = $6,
		backend = $7, domains = $8, intents = $9, pairs = $10, model = $11, requested_by = $12, state = $13, reason = $14,
		verdict = $15, created_at = $16, ended_at = $17, check_id = $18, check_version = $19, check_posted = $20,
		workflow_run_id = $21, workflow_run_url = $22, dispatched_at = $23, job_id = $24, done_pairs = $25, total_pairs = $26,
		agent = $27, base_sha = $28, fail_on = $29, top_ups = $30, look = $31, looks = $32, planned_pairs = $33, stop_look = $34,
		stop_kind = $35, stop_reason = $36 WHERE run = $1`, args...)
	if err != nil {
		return fmt.Errorf("state: save bench %s: %w", b.Run, err)
	}
	return nil
}

// Bench reads a bench; found is false for a run id the service never made.
func (tx *Tx) Bench(ctx context.Context, run string) (b Bench, found bool, err error) {
	bs, err := tx.benches(ctx, `WHERE run = $1`, run)
	if err != nil || len(bs) == 0 {
		return Bench{}, false, err
	}
	return bs[0], true, nil
}

// LockBench reads a bench and holds it until the transaction ends: read
// it this way to change it, so concurrent changes on other replicas wait
// rather than overwrite each other.
func (tx *Tx) LockBench(ctx context.Context, run string) (b Bench, found bool, err error) {
	if _, err := tx.q.exec(ctx, `UPDATE pb_benches SET run = run WHERE run = $1`, run); err != nil {
		return Bench{}, false, fmt.Errorf("state: lock bench %s: %w", run, err)
	}
	return tx.Bench(ctx, run)
}

// BenchesOfPull returns a pull request's benches, newest first.
func (tx *Tx) BenchesOfPull(ctx context.Context, repo string, pr int) ([]Bench, error) {
	return tx.benches(ctx, `WHERE repo = $1 AND pr = $2 ORDER BY created_at DESC, run DESC`, repo, pr)
}

// BenchesOfCommit returns the benches of a commit of a repository, newest
// first.
func (tx *Tx) BenchesOfCommit(ctx context.Context, repo, sha string) ([]Bench, error) {
	return tx.benches(ctx, `WHERE repo = $1 AND sha = $2 ORDER BY created_at DESC, run DESC`, repo, sha)
}

// BenchOfWorkflowRun returns the bench the service dispatched as Actions
// run id in repo.
func (tx *Tx) BenchOfWorkflowRun(ctx context.Context, repo string, id int64) (b Bench, found bool, err error) {
	if id == 0 {
		return Bench{}, false, nil
	}
	bs, err := tx.benches(ctx, `WHERE repo = $1 AND workflow_run_id = $2`, repo, id)
	if err != nil || len(bs) == 0 {
		return Bench{}, false, err
	}
	return bs[0], true, nil
}

// BenchesIn returns the benches in any of the given states, oldest first.
func (tx *Tx) BenchesIn(ctx context.Context, states ...string) ([]Bench, error) {
	ph := make([]string, len(states))
	args := make([]any, len(states))
	for i, s := range states {
		ph[i], args[i] = fmt.Sprintf("$%d", i+1), s
	}
	return tx.benches(ctx, `WHERE state IN (`+strings.Join(ph, ", ")+`) ORDER BY created_at, run`, args...)
}

// UnpostedSurfaces returns the pull requests whose comment or label does
// not show their newest state.
func (tx *Tx) UnpostedSurfaces(ctx context.Context) ([]Pull, error) {
	var out []Pull
	err := tx.q.query(ctx, `SELECT `+pullColumns+` FROM pb_pulls WHERE surface_posted < surface_version`, nil,
		func(scan func(...any) error) error {
			p, err := scanPull(scan)
			out = append(out, p)
			return err
		})
	return out, err
}

// UnpostedChecks returns the benches whose check run does not show their
// newest state.
func (tx *Tx) UnpostedChecks(ctx context.Context) ([]Bench, error) {
	return tx.benches(ctx, `WHERE check_posted < check_version ORDER BY created_at, run`)
}

func (tx *Tx) benches(ctx context.Context, where string, args ...any) ([]Bench, error) {
	var out []Bench
	err := tx.q.query(ctx, `SELECT `+benchColumns+` FROM pb_benches `+where, args, func(scan func(...any) error) error {
		b, err := scanBench(scan)
		out = append(out, b)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("state: benches: %w", err)
	}
	return out, nil
}

// RecordReply notes that the service replied to login on a pull request, a
// reply of a kind ("refused", "command", ...).
func (tx *Tx) RecordReply(ctx context.Context, repo string, pr int, login, kind string) error {
	_, err := tx.q.exec(ctx, `INSERT INTO pb_replies (repo, pr, login, kind, at) VALUES ($1, $2, $3, $4, $5)`, repo, pr, login, kind, ms(tx.now))
	return err
}

// Replies counts the replies on a pull request since t; login and kind, if
// not "", narrow the count.
func (tx *Tx) Replies(ctx context.Context, repo string, pr int, login, kind string, since time.Time) (int, error) {
	var n int64
	err := tx.q.queryRow(ctx, `SELECT COUNT(*) FROM pb_replies WHERE repo = $1 AND pr = $2 AND at >= $3
		AND ($4 = '' OR login = $4) AND ($5 = '' OR kind = $5)`, []any{repo, pr, ms(since), login, kind}, &n)
	return int(n), err
}

// TakeLease takes or renews the lease name for owner until now+ttl. It
// returns false while another owner holds an unexpired lease: one writer at
// a time, across replicas, for what must not be written in parallel.
func (tx *Tx) TakeLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	n, err := tx.q.exec(ctx, `INSERT INTO pb_leases (name, owner, until_ms) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until_ms = excluded.until_ms
		WHERE pb_leases.until_ms < $4 OR pb_leases.owner = excluded.owner`, name, owner, ms(tx.now.Add(ttl)), ms(tx.now))
	return n == 1, err
}

// ReleaseLease gives up owner's lease name.
func (tx *Tx) ReleaseLease(ctx context.Context, name, owner string) error {
	_, err := tx.q.exec(ctx, `DELETE FROM pb_leases WHERE name = $1 AND owner = $2`, name, owner)
	return err
}
