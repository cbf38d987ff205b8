// Package fleet runs pair tests across many hosts and says which host or
// path is the slow one.
//
// The design all uses the round-robin "circle method" of NVIDIA ClusterKit
// and JSC LinkTest: with n hosts, n−1 rounds (n for odd n, where each
// round one host sits out) of ⌊n/2⌋ disjoint pairs cover every pair once.
// Each pair is measured in both directions, as two tests in the same
// round: every round has two legs, the first running each pair's first
// host to its second, the second the way back. So a host is in at most one
// test at a time, in both legs, and a matrix of n hosts is n(n−1) tests in
// 2(n−1) legs (2n for odd n). The design sampled draws K of those rounds
// at random, over the hosts in a random order (a seeded random K-regular
// graph: nK tests in 2K legs), then tests suspects against hosts already
// proven good. Serial, the default, runs one test at a time, in the same
// order; Parallel runs each leg's tests at once, which stresses the fabric
// as real jobs do. The patterns ring and star:HOST test fewer pairs. The
// pattern incast:HOST is no schedule of pairs: every other host sends to
// HOST at once, in one leg, and the result is the senders' shares of what
// HOST took (Incast), blaming nobody.
//
// A test is slow when it carried less than the threshold (90% by default)
// of the median of the schedule's first tries. Slow tests are tried again
// as they first ran (in legs of disjoint tests at once with Parallel; one
// at a time after a control otherwise), and a test is slow when every try
// was and two of them were free of contention; one slow every time with
// fewer tries free of it (its own record shows contention:
// Measurement.Contention) is inconclusive, never blamed. Sides are blamed one at a time, the most convincing first:
// a host slow with most of its partners when it sends is blamed on its
// send side (and likewise on its receive side, or both), each blamed side
// explaining its tests for their other ends; the slow tests no blamed side
// explains, tried again (with Parallel at once with controls, fine tests
// run again that scale the limit to their moment), are blamed on their
// paths. A test that fails (an
// unreachable host, an agent that died) is recorded with its reason and
// the run goes on; a host that fails with most partners is blamed too.
//
// The traffic itself is a Runner's business: this package schedules,
// analyses and reports, and is tested with Runners whose slow host or path
// a test plants, and with a model fleet of 1,000 hosts. Plan says what a
// run will do and how long it will take, running nothing.
// docs/schema/fleet-v1.schema.json describes the fleet JSON document
// (schema linerate.fleet/v1).
package fleet
