package history

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/usage"
)

const (
	sidA = "aaaaaaaa-1111-4111-8111-111111111111"
	sidB = "bbbbbbbb-2222-4222-8222-222222222222"
	sidC = "cccccccc-3333-4333-8333-333333333333"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestPriceTable(t *testing.T) {
	p := DefaultPrices()
	tests := []struct {
		model string
		u     Usage
		want  float64
		ok    bool
	}{
		// The CLI's own figure for this sample (reference 2.4): $0.012375.
		{"claude-opus-4-8", Usage{InputTokens: 1200, OutputTokens: 80, CacheReadInputTokens: 5000, CacheCreationInputTokens: 300}, 0.012375, true},
		{"claude-opus-4-8[1m]", Usage{InputTokens: 1e6}, 5, true},
		{"claude-sonnet-5", Usage{InputTokens: 1e6, OutputTokens: 1e6}, 18, true},
		{"claude-haiku-4-5-20251001", Usage{InputTokens: 1e6, OutputTokens: 1e6}, 6, true},
		{"claude-sonnet-4-5-20250929", Usage{InputTokens: 300000}, 1.8, true}, // long-context tier
		{"claude-opus-4-20250514", Usage{OutputTokens: 1e6}, 75, true},
		{"claude-opus-4-9", Usage{InputTokens: 1}, 0, false}, // never priced as a neighbour
		{"<synthetic>", Usage{}, 0, false},
	}
	for _, tt := range tests {
		got, ok := p.Cost(tt.model, tt.u)
		if ok != tt.ok || !near(got, tt.want) {
			t.Errorf("Cost(%s) = %v, %v; want %v, %v", tt.model, got, ok, tt.want, tt.ok)
		}
	}
	// 1-hour cache writes cost 2x input, 5-minute 1.25x.
	u := Usage{CacheCreationInputTokens: 3e6}
	u.CacheCreation.Ephemeral5m, u.CacheCreation.Ephemeral1h = 1e6, 2e6
	if got, _ := p.Cost("claude-opus-4-8", u); !near(got, 5*1.25+5*2*2) {
		t.Errorf("cache write split cost = %v", got)
	}
}

func TestEmbeddedPrices(t *testing.T) {
	p, err := ParsePrices(embeddedPrices)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"claude-opus-4-8", "claude-sonnet-5", "claude-haiku-4-5"} {
		if _, ok := p.Models[m]; !ok {
			t.Errorf("embedded table lacks %s", m)
		}
	}
}

func TestLoadPrices(t *testing.T) {
	f := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(f, []byte(`{"models":{"claude-mystery-9":{"input":2,"output":4},"claude-opus-4-8":{"input":1,"output":1}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPrices(f)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := p.Cost("claude-mystery-9-20990101", Usage{InputTokens: 1e6}); !ok || got != 2 {
		t.Errorf("override model = %v, %v", got, ok)
	}
	if got, _ := p.Cost("claude-opus-4-8", Usage{InputTokens: 1e6}); got != 1 {
		t.Errorf("overridden price = %v", got)
	}
	if _, ok := p.Cost("claude-haiku-4-5", Usage{}); !ok {
		t.Error("embedded models lost by an override file")
	}
	if err := os.WriteFile(f, []byte(`{"models":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPrices(f); err == nil {
		t.Error("broken price file accepted")
	}
}

func TestTranscriptUsage(t *testing.T) {
	got, err := TranscriptUsage(context.Background(), filepath.Join("testdata", "projects", "-home-me-proj", sidA+".jsonl"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// msg_1 (split over two lines), msg_2, msg_3 on opus; msg_s1, msg_s2 in
	// the subagent on haiku; the synthetic API error is skipped.
	want := Totals{Tokens: usage.Tokens{InputTokens: 630, OutputTokens: 127, CacheReadInputTokens: 5000, CacheCreationInputTokens: 300}, APICalls: 5,
		CostUSD: (600*5 + 114*25 + 300*6.25 + 5000*0.5 + 30*1 + 13*5) / 1e6}
	if !near(got.CostUSD, want.CostUSD) {
		t.Errorf("cost = %v, want %v", got.CostUSD, want.CostUSD)
	}
	got.CostUSD = want.CostUSD
	if !slices.Equal(got.UnpricedModels, want.UnpricedModels) || got.InputTokens != want.InputTokens || got.OutputTokens != want.OutputTokens ||
		got.CacheReadInputTokens != want.CacheReadInputTokens || got.CacheCreationInputTokens != want.CacheCreationInputTokens || got.APICalls != want.APICalls {
		t.Errorf("TranscriptUsage = %+v\nwant %+v", got, want)
	}
	if _, err := TranscriptUsage(context.Background(), "testdata/nope.jsonl", nil); err == nil {
		t.Error("missing transcript: no error")
	}
}

func TestScanDeduplicatesForks(t *testing.T) {
	c, err := Scan(context.Background(), "testdata", ScanOptions{Summary: true})
	if err != nil {
		t.Fatal(err)
	}
	rows := c.UsageBy(BySession, time.UTC)
	byID := map[string]UsageRow{}
	for _, r := range rows {
		byID[r.SessionID] = r
	}
	a, b, cc := byID[sidA], byID[sidB], byID[sidC]
	// The fork B copied A's calls; it is charged only for its own call.
	if a.APICalls != 5 || b.APICalls != 1 || b.InputTokens != 50 || !near(b.CostUSD, (50*3+10*15)/1e6) {
		t.Errorf("A = %+v\nB = %+v", a, b)
	}
	if cc.UnpricedCalls != 1 || !cc.Unpriced || a.Unpriced || cc.CostUSD != 0 || cc.InputTokens != 1000 || !slices.Contains(cc.Flags, FlagCompacted) || !slices.Contains(cc.Flags, FlagInterrupted) {
		t.Errorf("C = %+v", cc)
	}
	tot := c.Total()
	if tot.APICalls != 7 || tot.InputTokens != 630+50+1000 || !slices.Equal(tot.UnpricedModels, []string{"claude-mystery-9"}) {
		t.Errorf("total = %+v", tot)
	}
	days := c.UsageBy(ByDay, time.UTC)
	if len(days) != 3 || days[0].Date != "2026-11-19" || days[1].Date != "2026-11-20" || days[1].APICalls != 5 {
		t.Errorf("by day = %+v", days)
	}
	models := c.UsageBy(ByModel, time.UTC)
	if len(models) != 4 {
		t.Errorf("by model = %+v", models)
	}

	ss := c.Sessions()
	if len(ss) != 3 {
		t.Fatalf("sessions = %d", len(ss))
	}
	var sa *SessionSummary
	for _, s := range ss {
		if s.ID == sidA {
			sa = s
		}
	}
	if sa.Prompts != 2 || sa.Subagents != 1 || sa.Project != "/home/me/proj" || sa.Stats.Malformed != 1 || sa.Stats.Torn != 1 ||
		!slices.Contains(sa.Flags, FlagMalformed) || sa.FirstPrompt[:22] != "Please list the files." {
		t.Errorf("summary A = %+v", sa)
	}
	if want := time.Date(2026, 11, 20, 10, 0, 23, 0, time.UTC); !sa.LastActivity.Equal(want) {
		t.Errorf("last activity = %v, want %v", sa.LastActivity, want)
	}
}

func TestScanFilters(t *testing.T) {
	ctx := context.Background()
	c, err := Scan(ctx, "testdata", ScanOptions{Filter: Filter{Project: "/srv/other"}})
	if err != nil {
		t.Fatal(err)
	}
	if ss := c.Sessions(); len(ss) != 1 || ss[0].ID != sidC {
		t.Errorf("--project /srv/other: %+v", ss)
	}
	since := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	c, err = Scan(ctx, "testdata", ScanOptions{Filter: Filter{Since: since}})
	if err != nil {
		t.Fatal(err)
	}
	if tot := c.Total(); tot.APICalls != 1 || tot.InputTokens != 50 {
		t.Errorf("--since: %+v", tot)
	}
	// The fork's copies are still A's (deduplicated over all files), even
	// when A's own calls fall outside the window.
	c, err = Scan(ctx, "testdata", ScanOptions{Filter: Filter{Until: since}})
	if err != nil {
		t.Fatal(err)
	}
	if tot := c.Total(); tot.APICalls != 6 {
		t.Errorf("--until: %+v", tot)
	}
}

// TestUsageByDayIsDeterministic: a day's cost sums the session's 15-minute
// buckets in time order, not in map order (floats differ in their last
// digits with the order).
func TestUsageByDayIsDeterministic(t *testing.T) {
	s := &SessionSummary{ID: sidA, byBucket: map[int64]*Totals{}}
	s.APICalls = 1
	day := time.Date(2026, 5, 6, 0, 0, 0, 0, time.UTC).Unix() / bucketSpan
	for i := range int64(60) {
		s.byBucket[day+i] = &Totals{CostUSD: 0.1 / float64(i+3), APICalls: 1}
	}
	c := &Corpus{sessions: []*SessionSummary{s}}
	want := c.UsageBy(ByDay, time.UTC)
	if len(want) != 1 || want[0].APICalls != 60 {
		t.Fatalf("rows = %+v, want one day of 60 calls", want)
	}
	for range 50 {
		if got := c.UsageBy(ByDay, time.UTC); got[0].CostUSD != want[0].CostUSD {
			t.Fatalf("cost %v, then %v", want[0].CostUSD, got[0].CostUSD)
		}
	}
}

// TestUsageScanAgreesWithSummaryScan: the usage scan, which reads past the
// lines that are not the model's, finds the calls, totals and flags the
// summary scan (every line parsed) finds, on every session of testdata and
// of the corpus of real shapes; only malformed lines without calls go unseen
// (as before the scan read past them).
func TestUsageScanAgreesWithSummaryScan(t *testing.T) {
	for _, dir := range []string{"testdata", corpusDir} {
		t.Run(dir, func(t *testing.T) { usageAgreesWithSummary(t, dir) })
	}
}

func usageAgreesWithSummary(t *testing.T, dir string) {
	rows := map[bool][]UsageRow{}
	for _, summary := range []bool{true, false} {
		c, err := Scan(context.Background(), dir, ScanOptions{Summary: summary})
		if err != nil {
			t.Fatal(err)
		}
		rows[summary] = c.UsageBy(BySession, time.UTC)
		for i := range rows[summary] {
			r := &rows[summary][i]
			r.Flags = slices.DeleteFunc(slices.Clone(r.Flags), func(f string) bool { return f == FlagMalformed })
			if len(r.Flags) == 0 {
				r.Flags = nil
			}
		}
	}
	if len(rows[true]) == 0 || !reflect.DeepEqual(rows[true], rows[false]) {
		t.Errorf("usage scan:\n%+v\nsummary scan:\n%+v", rows[false], rows[true])
	}
}
