package state

// migrations are the service's schema, one entry per version, applied in
// order; never edit a released entry, add one. Statements are separated by
// semicolons and use only SQL both databases read the same way; BLOB is
// BYTEA on Postgres. Every column is NOT NULL with a default (0 and ” mean
// "none"), so rows scan alike on both; times are Unix milliseconds.
var migrations = []string{
	// 1: deliveries, pull requests, benches, reply throttles, leases.
	`
CREATE TABLE pb_deliveries (
	installation BIGINT NOT NULL,
	id TEXT NOT NULL,
	event TEXT NOT NULL,
	payload BLOB NOT NULL,
	received_at BIGINT NOT NULL,
	handled_at BIGINT NOT NULL DEFAULT 0,
	PRIMARY KEY (installation, id)
);
CREATE INDEX pb_deliveries_received ON pb_deliveries (received_at);

CREATE TABLE pb_pulls (
	repo TEXT NOT NULL,
	pr BIGINT NOT NULL,
	installation BIGINT NOT NULL DEFAULT 0,
	default_branch TEXT NOT NULL DEFAULT '',
	head_sha TEXT NOT NULL DEFAULT '',
	head_since BIGINT NOT NULL DEFAULT 0,
	closed BIGINT NOT NULL DEFAULT 0,
	bench TEXT NOT NULL DEFAULT '',
	sticky_id BIGINT NOT NULL DEFAULT 0,
	approval_id BIGINT NOT NULL DEFAULT 0,
	approval_sha TEXT NOT NULL DEFAULT '',
	approval_body TEXT NOT NULL DEFAULT '',
	approval_posted TEXT NOT NULL DEFAULT '',
	sticky_hash TEXT NOT NULL DEFAULT '',
	label TEXT NOT NULL DEFAULT '',
	surface_version BIGINT NOT NULL DEFAULT 0,
	surface_posted BIGINT NOT NULL DEFAULT 0,
	updated_at BIGINT NOT NULL DEFAULT 0,
	PRIMARY KEY (repo, pr)
);

CREATE TABLE pb_benches (
	run TEXT PRIMARY KEY,
	repo TEXT NOT NULL,
	pr BIGINT NOT NULL,
	installation BIGINT NOT NULL DEFAULT 0,
	sha TEXT NOT NULL,
	default_branch TEXT NOT NULL DEFAULT '',
	backend TEXT NOT NULL,
	domains TEXT NOT NULL DEFAULT '',
	intents TEXT NOT NULL DEFAULT '',
	pairs BIGINT NOT NULL DEFAULT 0,
	model TEXT NOT NULL DEFAULT '',
	requested_by TEXT NOT NULL DEFAULT '',
	state TEXT NOT NULL,
	reason TEXT NOT NULL DEFAULT '',
	verdict TEXT NOT NULL DEFAULT '',
	created_at BIGINT NOT NULL,
	ended_at BIGINT NOT NULL DEFAULT 0,
	check_id BIGINT NOT NULL DEFAULT 0,
	check_version BIGINT NOT NULL DEFAULT 0,
	check_posted BIGINT NOT NULL DEFAULT 0,
	workflow_run_id BIGINT NOT NULL DEFAULT 0,
	workflow_run_url TEXT NOT NULL DEFAULT '',
	dispatched_at BIGINT NOT NULL DEFAULT 0,
	job_id BIGINT NOT NULL DEFAULT 0,
	done_pairs BIGINT NOT NULL DEFAULT 0,
	total_pairs BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX pb_benches_pull ON pb_benches (repo, pr);
CREATE INDEX pb_benches_state ON pb_benches (state);
CREATE INDEX pb_benches_workflow_run ON pb_benches (repo, workflow_run_id);

CREATE TABLE pb_replies (
	repo TEXT NOT NULL,
	pr BIGINT NOT NULL,
	login TEXT NOT NULL,
	kind TEXT NOT NULL,
	at BIGINT NOT NULL
);
CREATE INDEX pb_replies_pull ON pb_replies (repo, pr, at);

CREATE TABLE pb_leases (
	name TEXT PRIMARY KEY,
	owner TEXT NOT NULL,
	until_ms BIGINT NOT NULL
)`,
	// 2: the agent a bench asked for ('' for the default).
	`ALTER TABLE pb_benches ADD COLUMN agent TEXT NOT NULL DEFAULT ''`,
	// 3: the comments whose /bench command was carried out, so a replayed
	// or late delivery of one is not.
	`
CREATE TABLE pb_commands (
	repo TEXT NOT NULL,
	comment_id BIGINT NOT NULL,
	at BIGINT NOT NULL,
	PRIMARY KEY (repo, comment_id)
);
CREATE INDEX pb_commands_at ON pb_commands (at)`,
	// 4: the pull request's base commit a bench compares head's tools
	// against ('' for a bench against no tools, as every bench before).
	`ALTER TABLE pb_benches ADD COLUMN base_sha TEXT NOT NULL DEFAULT ''`,
	// 5: what fails the bench's check run (.pairbench.yml's fail_on at the
	// bench's commit; '' for the verdict's own conclusion).
	`ALTER TABLE pb_benches ADD COLUMN fail_on TEXT NOT NULL DEFAULT ''`,
	// 6: how often /bench more topped the bench's run up.
	`ALTER TABLE pb_benches ADD COLUMN top_ups BIGINT NOT NULL DEFAULT 0`,
	// 7: a local bench's look under way and the look it stopped at, and
	// why, for its check run while its report is not yet written.
	`
ALTER TABLE pb_benches ADD COLUMN look BIGINT NOT NULL DEFAULT 0;
ALTER TABLE pb_benches ADD COLUMN looks BIGINT NOT NULL DEFAULT 0;
ALTER TABLE pb_benches ADD COLUMN planned_pairs BIGINT NOT NULL DEFAULT 0;
ALTER TABLE pb_benches ADD COLUMN stop_look BIGINT NOT NULL DEFAULT 0;
ALTER TABLE pb_benches ADD COLUMN stop_kind TEXT NOT NULL DEFAULT '';
ALTER TABLE pb_benches ADD COLUMN stop_reason TEXT NOT NULL DEFAULT ''`,
}
