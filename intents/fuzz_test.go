package intents

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzLoadIntent feeds arbitrary bytes to the intent decoder and to the
// fixture resolver: neither may panic, and every problem must have a line.
func FuzzLoadIntent(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(exampleRegistry, "bench/intents/*/*.yaml"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("id: x\nfixtures: {a: {days_from_start: 3}, b: {value: [1, 2]}, c: 1}\nprompt: '{{a}} {{b}} {{c}} {{d}}'\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("rules: [{rule: len, min: x}]\nbaseline: {steps: [{tool: 3, args: [1]}]}\n"))
	f.Add([]byte("x: &x {a: 1}\ny: {<<: *x}\nanswer: *x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var ps Problems
		in, _ := decodeIntent("f.yaml", data, &ps)
		for _, p := range ps {
			if p.Line < 1 || p.File != "f.yaml" {
				t.Fatalf("problem without a position: %+v", p)
			}
		}
		if in != nil {
			_, _ = Resolve(*in, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			_, _ = Stale(*in, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		}
	})
}
