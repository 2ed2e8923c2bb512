// Command statstables computes the tables docs/statistics.md publishes, so that
// every figure there can be reproduced:
//
//	go run ./cmd/statstables coverage   # exact coverage of the intervals
//	go run ./cmd/statstables power      # pairs needed for 80% power
//
// Each table is printed as Markdown on stdout. The same inputs always give
// the same table.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pairbench/pairbench/stats"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./cmd/statstables coverage|power")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "coverage":
		coverage(os.Stdout)
	case "power":
		power(os.Stdout)
	default:
		fmt.Fprintf(os.Stderr, "tables: unknown table %q (want coverage or power)\n", os.Args[1])
		os.Exit(2)
	}
}

// coverageN are the numbers of pairs of the coverage table, and
// coverageP the chances of a treatment-only and of a control-only pair.
var (
	coverageN = []int{5, 10, 20, 30, 50, 100}
	coverageP = []float64{0.02, 0.05, 0.1, 0.2, 0.3, 0.45}
)

// coverage writes the exact coverage of the discordant-share interval
// (lowest and mean over every pair of chances in coverageP) and of the
// per-arm Wilson interval (lowest and mean over p in 0.01..0.99), at α =
// 0.05, for each N.
func coverage(w io.Writer) {
	const alpha = 0.05
	z := stats.Z(alpha)
	fmt.Fprintln(w, "| pairs N | share: lowest | share: mean | Wilson: lowest | Wilson: mean |")
	fmt.Fprintln(w, "|--:|--:|--:|--:|--:|")
	for _, n := range coverageN {
		lo, sum, k := 1.0, 0.0, 0
		for _, pb := range coverageP {
			for _, pc := range coverageP {
				if pb+pc > 1 {
					continue
				}
				c := stats.ShareCoverage(n, pb, pc, alpha)
				lo, sum, k = min(lo, c), sum+c, k+1
			}
		}
		wlo, wsum := 1.0, 0.0
		for i := 1; i <= 99; i++ {
			c := stats.WilsonCoverage(n, float64(i)/100, z)
			wlo, wsum = min(wlo, c), wsum+c
		}
		fmt.Fprintf(w, "| %d | %.4f | %.4f | %.4f | %.4f |\n", n, lo, sum/float64(k), wlo, wsum/99)
	}
	fmt.Fprintf(w, "\nShare: over treatment-only and control-only chances each in {%s}. Wilson: over p = 0.01, 0.02, …, 0.99.\n", join(coverageP))
}

func join(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
