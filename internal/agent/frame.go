package agent

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Frame size bounds. Before authentication a peer gets only enough room
// for a handshake message; after it, room for an interval report of a
// large host (128 streams and a few hundred CPUs).
const (
	maxHandshakeFrame = 4 << 10
	maxFrame          = 1 << 20
	// maxDoctorFrame bounds the one large message, an agent's doctor
	// report (a host with hundreds of CPUs and thousands of NIC IRQs);
	// only a client that asked for it reads a frame this large.
	maxDoctorFrame = 16 << 20
)

// Frame errors. Each is wrapped with what was being read.
var (
	errFrameTooLarge = errors.New("frame larger than allowed")
	errFrameEmpty    = errors.New("empty frame")
	errFrameTrunc    = errors.New("truncated frame")
)

// readFrame reads one frame of at most limit bytes from r and returns its
// body. A length over limit is refused before any of the body is read.
func readFrame(r io.Reader, limit int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: incomplete length", errFrameTrunc)
		}
		return nil, err // io.EOF between frames: the peer hung up
	}
	return readBody(r, binary.BigEndian.Uint32(hdr[:]), limit)
}

func readBody(r io.Reader, n uint32, limit int) ([]byte, error) {
	if n == 0 {
		return nil, errFrameEmpty
	}
	if uint64(n) > uint64(limit) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", errFrameTooLarge, n, limit)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: header announced %d bytes", errFrameTrunc, n)
		}
		return nil, err
	}
	return body, nil
}

// writeFrame writes body as one frame. The reader's bound is its own
// (conn.limit); this one only refuses what no reader would take.
func writeFrame(w io.Writer, body []byte) error {
	if len(body) == 0 || len(body) > maxDoctorFrame {
		return fmt.Errorf("%w: refusing to send %d bytes", errFrameTooLarge, len(body))
	}
	buf := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	_, err := w.Write(buf)
	return err
}

// conn is a control connection: frames with deadlines.
type conn struct {
	c     net.Conn
	r     io.Reader // c, or c behind bytes the agent already read
	limit int       // current frame bound; raised after authentication
	// cutoff, when set, is a deadline no read or write may pass,
	// whatever its own timeout: the agent's budget for a connection to
	// authenticate.
	cutoff time.Time
	// out and in MAC the frames each way once the handshake is done
	// (keys.go); nil before.
	out, in *sealing
}

func newConn(c net.Conn) *conn { return &conn{c: c, r: c, limit: maxHandshakeFrame} }

// deadline is now+timeout, or the cutoff if that comes first.
func (c *conn) deadline(timeout time.Duration) time.Time {
	d := time.Now().Add(timeout)
	if !c.cutoff.IsZero() && c.cutoff.Before(d) {
		return c.cutoff
	}
	return d
}

// send writes one message with a write deadline.
func (c *conn) send(m any, timeout time.Duration) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding %T: %w", m, err)
	}
	if c.out != nil {
		body = append(body, c.out.tag(body)...)
	}
	if err := c.c.SetWriteDeadline(c.deadline(timeout)); err != nil {
		return err
	}
	return writeFrame(c.c, body)
}

// recv reads one message within timeout and returns its type and body.
func (c *conn) recv(timeout time.Duration) (string, []byte, error) {
	if err := c.c.SetReadDeadline(c.deadline(timeout)); err != nil {
		return "", nil, err
	}
	return c.read()
}

// read reads one message under the deadline already set.
func (c *conn) read() (string, []byte, error) {
	body, err := readFrame(c.r, c.limit)
	if err != nil {
		return "", nil, err
	}
	if c.in != nil {
		if body, err = c.in.open(body); err != nil {
			return "", nil, err
		}
	}
	typ, err := messageType(body)
	return typ, body, err
}

// expect reads one message of type want into v. An "error" or "busy"
// message from the peer becomes a *PeerError.
func (c *conn) expect(want string, v any, timeout time.Duration) error {
	typ, body, err := c.recv(timeout)
	if err != nil {
		return err
	}
	return decodeAs(typ, body, want, v)
}

// expect reads one message of type want within timeout and checks its
// bounds (proto.go).
func expect[T any](c *conn, want string, timeout time.Duration, check func(*T) error) (*T, error) {
	typ, body, err := c.recv(timeout)
	if err != nil {
		return nil, err
	}
	return decode(typ, body, want, check)
}
