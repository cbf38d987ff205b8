// Package bench runs benchmark campaigns — repeats, stream-count sweeps
// and placement comparisons — through a driver, with per-CPU telemetry
// beside every run, stores each run as it ends, and has package explain
// summarise them.
//
// Its parts, by file:
//   - campaigns: spec.go (Spec, Params and the one writer of the CLI's
//     flags: the reproduce commands), campaign.go (Campaign: run, store,
//     summarise), target.go (a driver and both ends' facts for a peer),
//     sidefile.go (runs kept beside a damaged database);
//   - drivers, in one package as node_exporter keeps its collectors: each
//     registers itself (register, DriverInfo with its Caps) from its file
//     (native.go, iperf3_driver.go, iperf2_driver.go, perftest_driver.go,
//     sockperf_driver.go, netperf_driver.go) with its tool's parser beside
//     it; the external tools share one lifecycle (runTool in driver.go);
//     agent.go runs a tool against a remote agent (AgentHosts), nic.go and
//     telemetry.go read both ends around it;
//   - lab glue: labhosts.go runs a tool across a lab's two hosts, labrun.go
//     runs the native engine there (this binary re-executed in each host:
//     `serve --once` in b, `bench ADDR --lab-client` in a, the test on its
//     stdin);
//   - text output: text.go, textcpu.go, probe_text.go (a run's Progress
//     callbacks), progress.go (TextReporter, a campaign's Reporter).
//
// Every run, whatever its driver, is a linerate.bench/v1 document
// (result.Result); a campaign's summary is a linerate.campaign/v1
// document (explain.Summary). The tool servers a remote agent starts are
// package toolserver's.
package bench
