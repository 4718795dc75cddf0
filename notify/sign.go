package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Headers of a json delivery.
const (
	// HeaderSignature is "t=<unix seconds>,v1=<hex HMAC-SHA256>", the MAC
	// taken over "<t>.<body>" with the target's secret, as Stripe signs
	// its webhooks: a receiver recomputes it and rejects an old t.
	HeaderSignature = "Pneuma-Signature"
	// HeaderEvent names the event; HeaderDelivery is unique per
	// notification (the same across retries, so receivers can deduplicate).
	HeaderEvent    = "Pneuma-Event"
	HeaderDelivery = "Pneuma-Delivery"
)

// Sign returns the Pneuma-Signature value of body at time t.
func Sign(secret, body []byte, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify checks a Pneuma-Signature header against body: the MAC must match
// (compared in constant time) and its time be within tolerance of now.
// Receivers written in Go may use it; docs/notifications.md shows the
// same check in a few lines of any language.
func Verify(secret, body []byte, header string, tolerance time.Duration, now time.Time) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return errors.New("signature header: want t=<unix>,v1=<hex>")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("signature too old or from the future: %s off, tolerance %s", d.Round(time.Second), tolerance)
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return errors.New("signature does not match the body")
}
