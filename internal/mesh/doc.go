// Package mesh is the judgement of the always-on mesh (`linerate serve
// --mesh`, `linerate mesh`): each pair's robust baseline and its state,
// the blame of hosts and paths by voting, the throughput tests' schedule,
// and the linerate.mesh/v1 document. It does no I/O: the agents
// (internal/agent) feed it what their probes measured, and the
// controller (`linerate mesh status`) the pairs every agent reported.
//
// # Pairs and their baselines
//
// A pair is directed: src probes dst. Its probes are summed into buckets
// of BucketLen (probes sent, their forward losses as dst counted them,
// the round trips' p50 and p99, whether either end's record showed
// contention in that time). A pair keeps the last BaselineBuckets
// buckets; its baseline is the median and the median absolute deviation
// (MAD) of the buckets' loss ratios and RTT p50s, over the buckets before
// the recent window (RecentBuckets) in which the pair was not degraded:
// a fault does not become its own baseline. The recent window is judged
// against it:
//
//   - down: the last DownBuckets buckets got no reply at all;
//   - loss: at least MinLost probes lost, a ratio above the baseline by
//     LossMargin or more (and twice it), and a binomial tail under the
//     baseline's ratio below LossP: at 10 probes a second, 5% loss is seen
//     within about 10 s, and a healthy pair of a 0.1% baseline raises it
//     once in years. A baseline's loss is taken as at least 0.1% and at
//     most 0.5%: more is never a pair's normal;
//   - latency: the recent p50 above the baseline's median by the largest
//     of RTTSigmas robust standard deviations (1.4826 × MAD), RTTRel of
//     the median and RTTAbs, in three recent buckets of four;
//   - goodput: the last throughput test below the median of the earlier
//     ones by the larger of GoodputSigmas robust deviations and
//     GoodputRel of the median.
//
// A degradation whose own record shows contention — a contended bucket
// (either host's CPUs busy with other work, the agent's thread late), a
// loss the receiving host's socket buffers account for, a throughput test
// that shared a CPU or ran beside other load — is inconclusive, not
// degraded: the pair keeps its state and says why.
//
// # Blame
//
// As a fleet run blames (internal/fleet): a host whose outgoing pairs are
// degraded or down with more than half of at least two partners is
// suspected on its send side, incoming on its receive side, both when
// both; a host no agent can reach (every pair into it down, none out of
// it known) is suspected whole; degraded pairs that no suspected host
// explains are suspected as paths once they have been so for PathSettle
// (a host's pairs degrade one by one: the first are no path's fault).
// Inconclusive and unknown pairs count for nothing.
package mesh
