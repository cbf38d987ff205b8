package bench

import (
	"net"
	"strconv"

	"github.com/linerate/linerate/internal/result"
)

// iperf3Facts keeps what iperf3 reported beyond the figures ParseIperf3
// reads, in the fields the run's document writes back as iperf3's own
// (result.Result.MarshalJSON): the connections' addresses, the MSS, the
// write size, the congestion control and the CPU split.
func (d *iperf3Doc) iperf3Facts(r *result.Result) {
	st := &r.Start
	st.MSS, st.BlockSize = d.Start.TCPMSSDefault, d.Start.TestStart.Blksize
	st.Window.Client = result.SockBufs{Sndbuf: d.Start.SndbufActual, Rcvbuf: d.Start.RcvbufActual}
	for i, c := range d.Start.Connected {
		conn := result.Connection{ID: i + 1, ClientCPU: -1, ServerCPU: -1,
			Local:  net.JoinHostPort(c.LocalHost, strconv.Itoa(c.LocalPort)),
			Remote: net.JoinHostPort(c.RemoteHost, strconv.Itoa(c.RemotePort))}
		conn.Sender = "client"
		if r.Start.Direction == result.Receive || (r.Start.Direction == result.Bidir && i >= st.Streams) {
			conn.Sender = "server"
		}
		st.Connections = append(st.Connections, conn)
	}
	st.SenderCongestion, st.ReceiverCongestion = d.End.SenderTCPCongestion, d.End.ReceiverTCPCongestion
	e, secs := &d.End, r.End.Seconds
	cpu := &r.End.CPU
	cpu.ClientUserSeconds, cpu.ClientSystemSeconds = e.CPU.HostUser/100*secs, e.CPU.HostSystem/100*secs
	cpu.ServerUserSeconds, cpu.ServerSystemSeconds = e.CPU.RemoteUser/100*secs, e.CPU.RemoteSystem/100*secs
}
