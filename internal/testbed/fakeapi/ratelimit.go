package fakeapi

import (
	"strconv"
	"time"
)

// Unified rate-limit headers, as the real API sends them to subscription
// (OAuth) clients. The CLI reads them only when CLAUDE_CODE_OAUTH_TOKEN is
// set and ANTHROPIC_API_KEY is not (shared/reference/claude-cli.md, section 7),
// and turns them into rate_limit_event lines on its stdout.
const (
	HeaderRateLimitStatus = "anthropic-ratelimit-unified-status"
	HeaderRateLimitReset  = "anthropic-ratelimit-unified-reset"
	HeaderRateLimitClaim  = "anthropic-ratelimit-unified-representative-claim"
	HeaderRateLimit5hUtil = "anthropic-ratelimit-unified-5h-utilization"
	HeaderRateLimit5hRst  = "anthropic-ratelimit-unified-5h-reset"
	HeaderRateLimit5hThr  = "anthropic-ratelimit-unified-5h-surpassed-threshold"
	HeaderRateLimitFallbk = "anthropic-ratelimit-unified-fallback"
)

// RateLimit is the account's unified rate-limit state that WithRateLimit
// reports: Status is "allowed", "allowed_warning" or "rejected"; Claim the
// limit that applies ("five_hour", "seven_day"); Utilization the share of it
// used (0..1); Reset when it resets.
type RateLimit struct {
	Status      string
	Claim       string
	Utilization float64
	Reset       time.Time
}

// WithRateLimit returns the response carrying the unified rate-limit
// headers of l (five_hour when l.Claim is empty).
func (r Response) WithRateLimit(l RateLimit) Response {
	claim := l.Claim
	if claim == "" {
		claim = "five_hour"
	}
	reset := strconv.FormatInt(l.Reset.Unix(), 10)
	r = r.WithHeader(HeaderRateLimitStatus, l.Status).
		WithHeader(HeaderRateLimitReset, reset).
		WithHeader(HeaderRateLimitClaim, claim).
		WithHeader(HeaderRateLimit5hUtil, strconv.FormatFloat(l.Utilization, 'f', -1, 64)).
		WithHeader(HeaderRateLimit5hRst, reset)
	if l.Status == "allowed_warning" {
		r = r.WithHeader(HeaderRateLimit5hThr, "0.9")
	}
	return r
}

// UsageLimit is the answer of the API to an account whose usage limit is
// reached until reset: a 429 rate_limit_error with the unified headers at
// status rejected. The CLI does not retry it: it prints a rate_limit_event
// with status rejected and resetsAt, and ends the turn with an error result
// (api_error_status 429).
func UsageLimit(reset time.Time) Response {
	return Error(429, "rate_limit_error", "usage limit reached").
		WithRateLimit(RateLimit{Status: "rejected", Utilization: 1, Reset: reset})
}
