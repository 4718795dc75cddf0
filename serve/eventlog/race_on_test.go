//go:build race

package eventlog

// raceEnabled: timing budgets do not hold under the race detector.
const raceEnabled = true
