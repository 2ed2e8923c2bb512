// Package githubtest is a fake GitHub REST API for tests of the bot and the
// GitHub Action. Tests point the real go-github and ghinstallation clients at
// it; it validates every request against GitHub's official REST description
// (npm @octokit/openapi, pruned to the operations pairbench uses), refuses
// operations it does not know and, for an installation token, operations
// GitHub Apps may not call, records every call, and keeps a small in-memory
// model of the repositories it serves: pull requests and their files, file
// contents at commits, collaborator permissions, comments, labels, check runs
// and workflow dispatches. Deliver and MustDeliver send webhook deliveries
// to a service as GitHub does, signed.
//
// A request the description or the fake refuses is answered with GitHub's
// error shape and also recorded as a violation; New registers a cleanup that
// fails the test if any violation was recorded, so an unexpected call can
// never pass unnoticed. Tests that provoke refusals on purpose call
// TakeViolations.
//
// The description is derived from npm @octokit/openapi 23.0.2, published by
// the Octokit contributors under the MIT licence (testdata/LICENSE.octokit-openapi).
//
// # Regenerating the description
//
// testdata/api.github.com.json is GitHub's description pruned to the
// operations listed in testdata/operations.txt. To add an operation, list it
// there and run, from the module root:
//
//	npm install --prefix /tmp/octo @octokit/openapi@23.0.2
//	go run ./bot/githubtest/internal/prune \
//	  -spec /tmp/octo/node_modules/@octokit/openapi/generated/api.github.com.json \
//	  -ops bot/githubtest/testdata/operations.txt \
//	  -out bot/githubtest/testdata/api.github.com.json
package githubtest
