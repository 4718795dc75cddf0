package history

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
)

//go:embed prices.json
var embeddedPrices []byte

// Price is one model family's price in USD per million tokens. Zero cache
// prices default to the CLI's multipliers of Input (reference 2.5).
type Price struct {
	Input        float64 `json:"input"`
	Output       float64 `json:"output"`
	CacheRead    float64 `json:"cache_read,omitempty"`
	CacheWrite5m float64 `json:"cache_write_5m,omitempty"`
	CacheWrite1h float64 `json:"cache_write_1h,omitempty"`
	// LongContext, when set, replaces the prices of a request whose prompt
	// (input + cache read + cache write) exceeds Threshold tokens.
	LongContext *LongContextPrice `json:"long_context,omitempty"`
}

// LongContextPrice is the tier above a prompt size.
type LongContextPrice struct {
	Threshold int64   `json:"threshold"`
	Input     float64 `json:"input"`
	Output    float64 `json:"output"`
}

// PriceTable maps normalised model names (families) to prices. Models must
// not change once the table is used: lookups are cached.
type PriceTable struct {
	Models map[string]Price `json:"models"`

	// lookups caches model name → lookupResult: normalising takes regexps,
	// and a history holds few distinct names but many calls.
	lookups sync.Map
}

type lookupResult struct {
	price Price
	ok    bool
}

// DefaultPrices returns the table embedded in the binary. Were it broken (a
// build defect TestEmbeddedPrices catches), every model would be unpriced,
// never guessed.
func DefaultPrices() *PriceTable {
	defaultOnce.Do(func() {
		t, err := ParsePrices(embeddedPrices)
		if err != nil {
			t = &PriceTable{Models: map[string]Price{}}
		}
		defaultTable = t
	})
	return defaultTable
}

var (
	defaultOnce  sync.Once
	defaultTable *PriceTable
)

// ParsePrices decodes a price table ({"models": {"claude-x": {"input":..}}}).
func ParsePrices(data []byte) (*PriceTable, error) {
	var t PriceTable
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("decode price table: %w", err)
	}
	if len(t.Models) == 0 {
		return nil, fmt.Errorf("decode price table: no \"models\"")
	}
	norm := make(map[string]Price, len(t.Models))
	for k, p := range t.Models {
		if p.Input < 0 || p.Output < 0 {
			return nil, fmt.Errorf("price of %s: negative price", k)
		}
		norm[NormalizeModel(k)] = p
	}
	t.Models = norm
	return &t, nil
}

// LoadPrices reads a price file and lays it over the embedded table: models in
// the file replace or add to the defaults.
func LoadPrices(path string) (*PriceTable, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read price file: %w", err)
	}
	over, err := ParsePrices(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	merged := &PriceTable{Models: make(map[string]Price)}
	for k, v := range DefaultPrices().Models {
		merged.Models[k] = v
	}
	for k, v := range over.Models {
		merged.Models[k] = v
	}
	return merged, nil
}

var (
	dateSuffix   = regexp.MustCompile(`[-@]\d{8}$`)
	vendorPrefix = regexp.MustCompile(`^(?:[a-z]{2,4}\.)?anthropic[./]`)
	bedrockVer   = regexp.MustCompile(`-v\d+(?::\d+)?$`)
)

// NormalizeModel reduces a model name to its family key: it trims a
// bracketed suffix such as "[1m]", a date stamp, a Bedrock/Vertex version
// and vendor prefix. "claude-opus-4-8[1m]" and "claude-opus-4-8-20260101"
// both become "claude-opus-4-8".
func NormalizeModel(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.IndexByte(m, '['); i > 0 {
		m = m[:i]
	}
	m = vendorPrefix.ReplaceAllString(m, "")
	m = bedrockVer.ReplaceAllString(m, "")
	m = dateSuffix.ReplaceAllString(m, "")
	return m
}

// Lookup returns the price of model. Families match exactly after
// normalisation, so an unknown model is never priced as a neighbour.
func (t *PriceTable) Lookup(model string) (Price, bool) {
	if t == nil {
		return Price{}, false
	}
	if r, ok := t.lookups.Load(model); ok {
		return r.(lookupResult).price, r.(lookupResult).ok
	}
	p, ok := t.Models[NormalizeModel(model)]
	t.lookups.Store(model, lookupResult{p, ok})
	return p, ok
}

// Cost prices one API response's usage. ok is false when the model is unknown.
func (t *PriceTable) Cost(model string, u Usage) (usd float64, ok bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	in, out := p.Input, p.Output
	if lc := p.LongContext; lc != nil && u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens > lc.Threshold {
		in, out = lc.Input, lc.Output
	}
	cr, c5, c1 := p.CacheRead, p.CacheWrite5m, p.CacheWrite1h
	if cr == 0 {
		cr = in * 0.1
	}
	if c5 == 0 {
		c5 = in * 1.25
	}
	if c1 == 0 {
		c1 = in * 2
	}
	w5, w1 := u.cacheWrites()
	usd = (float64(u.InputTokens)*in + float64(u.OutputTokens)*out +
		float64(w5)*c5 + float64(w1)*c1 + float64(u.CacheReadInputTokens)*cr) / 1e6
	return usd, true
}
