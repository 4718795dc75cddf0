//go:build race

package serve

// raceEnabled: timing bounds do not hold under the race detector.
const raceEnabled = true
