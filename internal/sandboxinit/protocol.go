package sandboxinit

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
)

// Program is the name of the init as a program of its own
// (cmd/pairbench-sandbox-init), installed beside pairbench.
const Program = "pairbench-sandbox-init"

// ProtocolArg makes Program print its Protocol and exit.
const ProtocolArg = "__sandbox-init-protocol"

// source is this package's code: what the init does and which arguments it
// takes.
//
//go:embed init.go
var source embed.FS

// Protocol identifies the init's arguments and behaviour: a digest of this
// package's source. Two binaries whose inits could differ never have the
// same one, so a launcher can tell whether a Program installed beside it
// is from its own build.
func Protocol() string {
	b, err := source.ReadFile("init.go")
	if err != nil {
		panic(err) // embedded above: cannot happen
	}
	h := sha256.Sum256(fmt.Appendf(nil, "init.go %d\n%s", len(b), b))
	return hex.EncodeToString(h[:8])
}
