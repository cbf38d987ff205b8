// Package bench runs benchmark campaigns — repeats, stream-count sweeps
// and CPU-placement comparisons — through one of several drivers (the
// native engine, iperf3, iperf2, perftest), with per-CPU telemetry beside
// every run; it summarises each campaign point (median, order-statistic
// interval, share of the line-rate ceiling, CPU cost) and, when repeats
// fall into buckets, says in plain words what differed between them.
//
// Every run, whatever its driver, is a linerate.bench/v1 document (Run);
// a campaign's summary is a linerate.campaign/v1 document (explain.Summary).
package bench
