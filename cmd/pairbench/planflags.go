package main

import (
	"fmt"
	"strconv"

	"github.com/pairbench/pairbench/bench"
	"github.com/pairbench/pairbench/stats"
)

// pairsValue is --pairs: a number of pairs per intent, or auto.
type pairsValue struct{ c *bench.Config }

func (v pairsValue) String() string {
	if v.c == nil {
		return ""
	}
	if v.c.PairsAuto {
		return "auto"
	}
	return strconv.Itoa(v.c.Pairs)
}

func (v pairsValue) Set(s string) error {
	if s == "auto" {
		v.c.PairsAuto, v.c.Pairs, v.c.PairsGiven = true, 0, false
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return fmt.Errorf("want a number of pairs of at least 1, or auto")
	}
	v.c.PairsAuto, v.c.Pairs, v.c.PairsGiven = false, n, true
	return nil
}

func (pairsValue) Type() string { return "pairs" }

// effectValue is --effect: a stats.Effect.
type effectValue struct{ e *stats.Effect }

func (v effectValue) String() string {
	if v.e == nil || (v.e.Speedup == 0 && v.e.Accuracy == 0) {
		return ""
	}
	return v.e.String()
}

func (v effectValue) Set(s string) error {
	e, err := stats.ParseEffect(s)
	if err != nil {
		return err
	}
	*v.e = e
	return nil
}

func (effectValue) Type() string { return "effect" }
