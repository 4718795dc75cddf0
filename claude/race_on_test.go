//go:build race

package claude

// raceEnabled: the race detector slows JSON decoding about tenfold.
const raceEnabled = true
