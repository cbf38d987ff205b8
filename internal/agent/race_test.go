//go:build race

package agent

// raceEnabled: the race detector multiplies a program's memory 5 to 10
// times (its documented overhead), so bounds on memory scale with it.
const raceEnabled = true
