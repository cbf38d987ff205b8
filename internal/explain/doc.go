// Package explain is the analysis of runs and campaigns: statistics
// (medians, order-statistic intervals, buckets of repeats, comparisons of
// two sets of runs), a campaign's summary (the linerate.campaign/v1
// document, Summary), and the sentences that say why runs differed —
// where the receive softirq ran against the application, other load on
// the CPUs, NIC counters that grew, streams that shared a receive CPU
// (Fairness) — with the compaction of a large host's per-CPU telemetry
// that keeps every explanation's inputs.
//
// It works on linerate.bench/v1 documents (package result) and the doctor
// report's topology only: it runs nothing, stores nothing and imports no
// driver, so bench (which makes the runs) and report (which shows stored
// ones) share it.
package explain
