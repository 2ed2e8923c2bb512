// Command verdictsim simulates runs through stats.Build and prints the
// figures docs/statistics.md states for the run-level verdict: the share of
// A/A runs with any false claim, the pairs per intent the pooled tests need
// for 80% power, the biased scenario, and runs that take their looks,
// decided by the runner's own stopping logic (rundir.Looker).
//
//	go run ./cmd/verdictsim aa        # A/A false claims per run
//	go run ./cmd/verdictsim power     # pairs per intent for 80% power
//	go run ./cmd/verdictsim biased    # accuracy effect, failures slow
//	go run ./cmd/verdictsim looks     # the group-sequential design
//	go run ./cmd/verdictsim aa-looks  # A/A false claims per run, with looks
//	go run ./cmd/verdictsim looks-power # power with looks against fixed
//	go run ./cmd/verdictsim topup     # A/A runs topped up when inconclusive
//
// Each is seeded, so the same command always prints the same table; -runs
// sets the number of simulated runs per cell.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	runs := flag.Int("runs", 1000, "simulated runs per cell")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./cmd/verdictsim [-runs N] aa|power|biased|looks|aa-looks|looks-power|topup")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	tables := map[string]func(io.Writer, int){"aa": aaTable, "power": powerTable, "biased": biasedTable, "looks": looksTable, "aa-looks": aaLooksTable, "looks-power": looksPowerTable, "topup": topUpTable}
	table, ok := tables[flag.Arg(0)]
	if !ok {
		fmt.Fprintf(os.Stderr, "verdictsim: unknown table %q (want aa, power, biased, looks, aa-looks, looks-power or topup)\n", flag.Arg(0))
		os.Exit(2)
	}
	table(os.Stdout, *runs)
}
