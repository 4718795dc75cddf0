package history

import (
	"context"
	"os"
	"testing"
)

// BenchmarkScanUsage scans the projects tree of $HISTORY_BENCH_CONFIG (a
// config directory such as scripts/bench-history.sh generates) as `history
// usage --no-cache` does. Skipped without it.
func BenchmarkScanUsage(b *testing.B) {
	benchScan(b, false)
}

// BenchmarkScanList is BenchmarkScanUsage as `history list --no-cache` scans.
func BenchmarkScanList(b *testing.B) {
	benchScan(b, true)
}

func benchScan(b *testing.B, summary bool) {
	dir := os.Getenv("HISTORY_BENCH_CONFIG")
	if dir == "" {
		b.Skip("HISTORY_BENCH_CONFIG is not set")
	}
	b.ReportAllocs()
	for b.Loop() {
		c, err := Scan(context.Background(), dir, ScanOptions{Summary: summary})
		if err != nil {
			b.Fatal(err)
		}
		if c.FilesRead == 0 {
			b.Fatal("no file read")
		}
	}
}
