package report

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/pairbench/pairbench"
)

// BenchmarkBuild1M builds the report of a run of 1,000,000 rows: 50 intents
// of 10,000 pairs, and 1,000 intents of 500. The rows are generated before the timer starts. Besides
// ns/op and B/op it reports peak-heap-MiB, the largest heap in use sampled every
// 20 ms during the builds (the rows included), and rows-MiB, the rows' own size.
//
//	go test ./report -run '^$' -bench Build1M -benchmem -count 3
func BenchmarkBuild1M(b *testing.B) {
	for _, n := range []int{50, 1000} {
		b.Run(fmt.Sprintf("intents=%d", n), func(b *testing.B) { benchmarkBuild(b, n, 1_000_000/2/n) })
	}
}

func benchmarkBuild(b *testing.B, intents, pairs int) {
	specs := manySpecs(intents, pairs)
	rows := generate(rand.New(rand.NewPCG(1, 2)), specs)
	plan := genPlan(specs, 42)
	if len(rows) != 1_000_000 {
		b.Fatalf("generated %d rows; want 1,000,000", len(rows))
	}
	runtime.GC()
	stop := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var ms runtime.MemStats
		var hi uint64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			hi = max(hi, ms.HeapInuse)
			select {
			case <-stop:
				peak <- hi
				return
			case <-tick.C:
			}
		}
	}()
	b.ResetTimer()
	var rep *Report
	for b.Loop() {
		rep = Build(plan, rows)
	}
	b.StopTimer()
	close(stop)
	b.ReportMetric(float64(<-peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(len(rows))*float64(unsafe.Sizeof(pairbench.Row{}))/(1<<20), "rows-MiB")
	if len(rep.Intents) != intents || rep.Intents[0].Pairs.Complete != pairs {
		b.Fatalf("unexpected report: %d intents", len(rep.Intents))
	}
}
