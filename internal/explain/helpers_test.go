package explain

import "strconv"

// designOf is the design of a campaign of engine against peer over the
// stream counts and placements given (none: one stream, "auto"), as bench
// makes it; command, when not nil, writes each point's reproduce command
// (bench's own writer is tested in bench).
func designOf(engine, peer string, streams []int, placements []string, command func(streams int, placement string) string) Design {
	if len(streams) == 0 {
		streams = []int{1}
	}
	if len(placements) == 0 {
		placements = []string{"auto"}
	}
	d := Design{Driver: engine, Peer: peer, Sweep: len(streams) > 1, Placements: len(placements) > 1}
	for _, n := range streams {
		for _, p := range placements {
			pt := Point{Streams: n, Placement: p}
			if command != nil {
				pt.Command = command(n, p)
			}
			d.Points = append(d.Points, pt)
		}
	}
	return d
}

// iperf3Command writes a one-run iperf3 bench command against peer of
// length secs, as bench writes it.
func iperf3Command(peer string, secs int) func(int, string) string {
	return func(n int, p string) string {
		cmd := "linerate bench " + peer + " --engine iperf3 -t " + strconv.Itoa(secs) + " -P " + strconv.Itoa(n)
		if p != "auto" {
			cmd += " -A " + p
		}
		return cmd
	}
}
