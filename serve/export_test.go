package serve

// RaceEnabled tells the end-to-end tests (package serve_test) to build the
// server with -race too.
const RaceEnabled = raceEnabled
