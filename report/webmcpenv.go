package report

import (
	"strings"

	"github.com/pairbench/pairbench"
)

// envKey is a trial's WebMCP environment as one comparable string: whose
// WebMCP the start page had, then the browser's environment (empty parts
// were not recorded).
type envKey struct{ impl, env string }

func newEnvKey(r *pairbench.Row) envKey {
	k := envKey{impl: string(r.WebMCPImpl)}
	if e := r.WebMCPEnv; e != nil {
		k.env = e.Browser + "\x00" + map[bool]string{true: "devtools", false: "-"}[e.DevTools] + "\x00" + strings.Join(e.Switches, "\x00")
	}
	return k
}

// differs reports whether two trials ran in WebMCP environments a pair's
// arms may not differ in; a part one of them did not record differs from
// nothing.
func (k envKey) differs(o envKey) bool {
	return k.impl != "" && o.impl != "" && k.impl != o.impl || k.env != "" && o.env != "" && k.env != o.env
}

// envs keeps the WebMCP environment of each pair's last attempts without a
// field per record: most runs have one environment, so only attempts whose
// environment is not the intent's first are kept, by pair.
type envs struct {
	first envKey
	seen  bool
	odd   map[int32]*[2]envKey
}

// note records k as the environment of the attempt of arm a in pair that
// is now that arm's last.
func (e *envs) note(pair int32, a int, k envKey) {
	if !e.seen {
		e.first, e.seen = k, true
	}
	if k == e.first {
		if o := e.odd[pair]; o != nil {
			o[a] = e.first
		}
		return
	}
	if e.odd == nil {
		e.odd = map[int32]*[2]envKey{}
	}
	o := e.odd[pair]
	if o == nil {
		o = &[2]envKey{e.first, e.first}
		e.odd[pair] = o
	}
	o[a] = k
}

// differ reports whether the last attempts of pair's two arms ran in
// different WebMCP environments.
func (e *envs) differ(pair int32) bool {
	o := e.odd[pair]
	return o != nil && o[0].differs(o[1])
}
