package bot

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pairbench/pairbench/intents/config"
)

// noRerun ends the first line of a failure that a re-run of the same
// commit cannot mend: failureText gives no re-run advice for it.
const noRerun = "a re-run of this commit cannot help: fix them and push."

// maxListedProblems bounds the registry problems a failure lists.
const maxListedProblems = 50

// failureReason says why a bench failed: lead and err's message, or, for a
// registry with problems (an error that wraps config.Problems, as
// bench.RegistryError does), a Markdown list of them, each at its file and
// line, which a comment and a check run show one per line.
func failureReason(lead string, err error) string {
	var ps config.Problems
	if !errors.As(err, &ps) || len(ps) == 0 {
		return lead + err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The registry at this commit has %d problem(s); %s\n", len(ps), noRerun)
	for i, p := range ps {
		if i == maxListedProblems {
			fmt.Fprintf(&b, "\n- … and %d more", len(ps)-maxListedProblems)
			break
		}
		fmt.Fprintf(&b, "\n- `%s`: %s", strings.ReplaceAll(p.Pos.String(), "`", "'"), strings.ReplaceAll(p.Msg, "\n", " "))
	}
	return b.String()
}
