package engine

import (
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/result"
)

// pollStreams carries several streams on one thread (Params.Threads below
// the streams): each sending flow writes one block when its socket has
// room, each receiving flow reads once when it has data, round after
// round. Per-flow counters are the streams' own, as with a thread per
// stream, so fairness across flows is measured the same way.
type pollStreams struct {
	w     *worker
	flows []*Stream
	snd   sender
	rx    result.SkipRxCopy
	halt  *atomic.Bool
	abort *atomic.Bool
	e     *epoller
	buf   []byte
	live  []bool // still registered
	n     int    // flows live
	stop  bool   // the senders were told to finish
	y     yielder
}

// run drives the flows until every one has ended: senders when the test
// stops, receivers when their peer's sender has.
func (t *pollStreams) run() error {
	var err error
	if t.e, err = newEpoller(); err != nil {
		return err
	}
	defer t.e.close()
	t.buf = make([]byte, max(sendSize, recvSize))
	fillPattern(t.buf)
	t.live = make([]bool, len(t.flows))
	for i, st := range t.flows {
		if err := t.register(i, st); err != nil {
			st.err = err
			continue
		}
		t.live[i] = true
		t.n++
	}
	for t.n > 0 {
		if t.abort.Load() {
			return nil
		}
		if !t.stop && t.halt.Load() {
			t.finishSenders()
		}
		for _, ev := range t.e.wait() {
			i := int(ev.Fd)
			if i < 0 || i >= len(t.flows) || !t.live[i] {
				continue
			}
			t.turn(i, t.flows[i], ev.Events)
		}
		t.y.tick()
	}
	return nil
}

func (t *pollStreams) register(i int, st *Stream) error {
	if err := unix.SetNonblock(st.FD, true); err != nil {
		return fmt.Errorf("stream %d: making the socket non-blocking: %w", st.ID, err)
	}
	ev := uint32(unix.EPOLLIN | unix.EPOLLRDHUP)
	if st.Send {
		ev = unix.EPOLLOUT
	} else if t.rx == result.ZerocopyReceive {
		z, err := newZCReceive(st.FD)
		if err != nil {
			return fmt.Errorf("stream %d: %w", st.ID, err)
		}
		st.zr = z
	}
	if err := t.e.add(st.FD, ev, int32(i), 0); err != nil {
		return fmt.Errorf("stream %d: adding the socket to epoll: %w", st.ID, err)
	}
	return nil
}

// end takes flow i out of the rounds, with err as its error unless it
// ended cleanly.
func (t *pollStreams) end(i int, err error) {
	st := t.flows[i]
	t.e.del(st.FD)
	t.live[i] = false
	t.n--
	if st.zr != nil {
		st.zr.close()
		st.zr = nil
	}
	if err != nil && st.err == nil {
		st.err = err
	}
}

// finishSenders tells every receiver no more is coming.
func (t *pollStreams) finishSenders() {
	t.stop = true
	for i, st := range t.flows {
		if t.live[i] && st.Send {
			_ = unix.Shutdown(st.FD, unix.SHUT_WR)
			t.end(i, nil)
		}
	}
}

// turn gives flow i its one system call of the round.
func (t *pollStreams) turn(i int, st *Stream, events uint32) {
	if st.Send {
		if t.stop {
			return
		}
		n, err := t.send(st)
		if n > 0 {
			st.bytes.Add(uint64(n))
		}
		if err != nil && err != unix.EAGAIN && err != unix.EINTR {
			t.end(i, sendErr(st, t.halt, err))
		}
		return
	}
	n, err := t.recv(st)
	switch {
	case n > 0:
		st.bytes.Add(uint64(n))
	case err == nil:
		t.end(i, nil) // EOF: the sender is done
	case err == unix.EAGAIN || err == unix.EINTR:
		if events&(unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			t.end(i, errors.New("the connection broke"))
		}
	default:
		t.end(i, fmt.Errorf("stream %d: receiving: %w", st.ID, err))
	}
}

func (t *pollStreams) send(st *Stream) (int, error) {
	if sf, ok := t.snd.(*sendfileSender); ok {
		var off int64
		return unix.Sendfile(st.FD, sf.memfd, &off, sendSize)
	}
	return unix.Write(st.FD, t.buf[:sendSize])
}

func (t *pollStreams) recv(st *Stream) (int, error) {
	switch t.rx {
	case result.MsgTrunc:
		return recvFlags(st.FD, t.buf[:recvSize], unix.MSG_TRUNC|unix.MSG_DONTWAIT)
	case result.ZerocopyReceive:
		return st.zr.recv(st.FD, &st.rx, false)
	}
	return recvFlags(st.FD, t.buf[:recvSize], unix.MSG_DONTWAIT)
}
