package engine

import (
	"net"
	"runtime"
	"testing"
)

// TestIncomingCPU reads SO_INCOMING_CPU from a real loopback connection:
// the receiving end reports a CPU of this machine once data arrived, the
// sending end reports none.
func TestIncomingCPU(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dial, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dial.Close()
	acc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer acc.Close()
	if _, err := dial.Write(make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	if _, err := acc.Read(buf); err != nil {
		t.Fatal(err)
	}
	raw, err := acc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got *int
	if err := raw.Control(func(fd uintptr) { got = incomingCPU(&Stream{FD: int(fd)}) }); err != nil {
		t.Fatal(err)
	}
	if got == nil || *got < 0 || *got >= runtime.NumCPU() {
		t.Errorf("receiving socket: incoming CPU %v, want one of %d CPUs", got, runtime.NumCPU())
	}
	if err := raw.Control(func(fd uintptr) { got = incomingCPU(&Stream{FD: int(fd), Send: true}) }); err != nil {
		t.Fatal(err)
	}
	if got != nil {
		t.Errorf("sending stream: incoming CPU %d, want none", *got)
	}
}
