package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
)

// txnFlags are bench's flags for transactions (--rr, --crr), many flows
// on few threads (--threads) and the receiver's copy (--skip-rx-copy).
type txnFlags struct {
	rr, crr    bool
	flows      int
	threads    int
	depth      int
	skipRxCopy string
	sweepFlows string
}

// addTxnFlags registers the flags in f on cmd.
func addTxnFlags(cmd *cobra.Command, f *txnFlags) {
	fl := cmd.Flags()
	fl.BoolVar(&f.rr, "rr", false, "request/response transactions as fast as they go over --flows connections (as neper tcp_rr): transactions/s, latency per transaction, CPU per transaction")
	fl.BoolVar(&f.crr, "crr", false, "as --rr with a new connection per transaction (as neper tcp_crr): a connection rate")
	fl.IntVar(&f.flows, "flows", 1, fmt.Sprintf("--rr/--crr: connections at once, 1 to %d", engine.MaxFlows))
	fl.IntVar(&f.threads, "threads", 0, fmt.Sprintf("threads per end that carry the flows (epoll), 1 to %d; default one per stream up to %d streams, else one per CPU", engine.MaxThreads, engine.OwnThreadsUpTo))
	fl.IntVar(&f.depth, "depth", 0, fmt.Sprintf("--rr: requests each flow keeps outstanding, 1 to %d (default 1)", engine.MaxDepth))
	fl.StringVar(&f.skipRxCopy, "skip-rx-copy", "", "receive without copying: msg_trunc (the default: recv(MSG_TRUNC), as iperf3 --skip-rx-copy) or zerocopy_receive (TCP_ZEROCOPY_RECEIVE); the run says when the kernel could not")
	fl.Lookup("skip-rx-copy").NoOptDefVal = string(result.MsgTrunc)
	fl.StringVar(&f.sweepFlows, "sweep-flows", "", "--rr/--crr: flow counts to sweep, e.g. 1,10,100 (instead of --flows)")
}

// mode is the test mode the flags ask for.
func (f txnFlags) mode() result.Mode {
	switch {
	case f.rr:
		return result.RR
	case f.crr:
		return result.CRR
	}
	return result.Stream
}

// checkTxn refuses combinations that mean nothing, before anything
// connects.
func (f benchFlags) checkTxn(cmd *cobra.Command) error {
	fl := cmd.Flags()
	txn := f.rr || f.crr
	switch {
	case f.rr && f.crr:
		return errors.New("--rr and --crr: pick one")
	case txn && (f.latency || f.udp):
		return errors.New("--rr/--crr and --latency/--udp: pick one (--latency is one message at a time on one connection; --rr runs as many as go over --flows)")
	case (f.latency || f.udp) && (fl.Changed("threads") || fl.Changed("skip-rx-copy")):
		return errors.New("--threads and --skip-rx-copy are for TCP streams and transactions, not --latency or --udp")
	}
	if !txn {
		for _, n := range []string{"flows", "depth", "sweep-flows"} {
			if fl.Changed(n) {
				return fmt.Errorf("--%s is for --rr or --crr (streams take -P and --sweep-streams)", n)
			}
		}
		return nil
	}
	for _, n := range []string{"parallel", "sweep-streams", "reverse", "bidir", "zerocopy", "skip-rx-copy"} {
		if fl.Changed(n) {
			return fmt.Errorf("--%s is for TCP streams: --rr and --crr take --flows, --sweep-flows, --threads, --size and --depth", n)
		}
	}
	if f.sweepFlows != "" && fl.Changed("flows") {
		return errors.New("--flows and --sweep-flows: give the flow counts in --sweep-flows only")
	}
	return nil
}

// txnParams sets the flags' mode, flows, threads, size, depth and receive
// method on p, and checks the test's shape with the engine's own bounds.
func (f benchFlags) txnParams(cmd *cobra.Command, p *bench.Params) error {
	var err error
	if p.SkipRxCopy, err = result.ParseSkipRxCopy(f.skipRxCopy); err != nil {
		return fmt.Errorf("--skip-rx-copy: %w", err)
	}
	p.Threads = f.threads
	if f.threads < 0 || f.threads > engine.MaxThreads || cmd.Flags().Changed("threads") && f.threads == 0 {
		return fmt.Errorf("--threads %d: must be 1 to %d", f.threads, engine.MaxThreads)
	}
	if p.Mode = f.mode(); p.Mode == result.Stream {
		return nil
	}
	if f.flows < 1 || f.flows > engine.MaxFlows {
		return fmt.Errorf("--flows %d: must be 1 to %d", f.flows, engine.MaxFlows)
	}
	p.Streams, p.Depth, p.Size = f.flows, f.depth, 1 // neper's default request and response
	if cmd.Flags().Changed("size") {
		if f.size < 1 || f.size > engine.MaxSize {
			return fmt.Errorf("--size %d: a transaction's request and response are 1 to %d bytes", f.size, engine.MaxSize)
		}
		p.Size = f.size
	}
	if f.depth < 0 || f.depth > engine.MaxDepth || cmd.Flags().Changed("depth") && f.depth == 0 {
		return fmt.Errorf("--depth %d: must be 1 to %d", f.depth, engine.MaxDepth)
	}
	return nil
}

// checkShape checks every point of s with the engine's bounds: flows,
// threads, size, depth and the options each mode takes. A sweep's points
// of fewer flows than --threads run on a thread a flow (bench.Spec caps
// them); one run is refused that.
func checkShape(s bench.Spec) error {
	for _, pt := range s.Points() {
		r := s.Run
		r.Streams = pt.Streams
		if len(s.Streams) > 1 {
			r.Params = bench.CapThreads(r.Params)
		}
		if err := r.EngineParams().Check(); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}
