// Package fleet runs the pair matrix across many hosts and says which host
// or path is the slow one.
//
// The schedule is the round-robin "circle method" of NVIDIA ClusterKit and
// JSC LinkTest: with n hosts, n−1 rounds (n for odd n, where each round one
// host sits out) of ⌊n/2⌋ disjoint pairs cover every pair once. Each pair
// is measured in both directions, as two tests in the same round: every
// round has two legs, the first running each pair's first host to its
// second, the second the way back. So a host is in at most one test at a
// time, in both legs, and a matrix of n hosts is n(n−1) tests in 2(n−1)
// legs (2n for odd n). Serial, the default, runs one test at a time, in the
// same order; --parallel runs each leg's tests at once, which stresses the
// fabric as real jobs do. The patterns ring and star:HOST test fewer pairs.
//
// A test is slow when it carried less than the threshold (90% by default)
// of the fleet's median test. Slow tests are re-tested one at a time, so
// that a test slow only under a parallel round's load comes back as it is;
// a test is confirmed slow when every try was. A host whose tests are
// confirmed slow with most of its partners when it sends is blamed on its
// send side (and likewise on its receive side, or both); the remaining
// slow tests are blamed on their paths. A test that fails (an unreachable
// host, an agent that died) is recorded with its reason and the matrix goes
// on; a host that fails with most partners is blamed too.
//
// The traffic itself is a Runner's business: this package schedules,
// analyses and reports, and is tested with a Runner whose slow host or path
// a test plants. docs/schema/fleet-v1.schema.json describes the fleet JSON
// document (schema linerate.fleet/v1).
package fleet
