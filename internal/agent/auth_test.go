package agent

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/result"
)

var testToken = []byte("test-token-0123456789abcdef")

// pipe returns two framed ends of an in-memory connection.
func pipe(t testing.TB) (*conn, *conn) {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return newConn(a), newConn(b)
}

func hostOf() result.HostInfo { return result.HostInfo{Hostname: "agent"} }

// agentHandshake runs the agent's whole handshake, welcome included.
func agentHandshake(c *conn, token []byte, seen *nonceLog) error {
	hs, err := serverHandshake(c, token, seen)
	if err != nil {
		return err
	}
	return hs.sendWelcome(c, hostOf())
}

func TestHandshake(t *testing.T) {
	cli, srv := pipe(t)
	var seen nonceLog
	errc := make(chan error, 1)
	go func() { errc <- agentHandshake(srv, testToken, &seen) }()
	host, err := clientHandshake(cli, testToken)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if host.Hostname != "agent" {
		t.Errorf("host = %+v", host)
	}
}

func TestHandshakeWrongToken(t *testing.T) {
	cli, srv := pipe(t)
	var seen nonceLog
	errc := make(chan error, 1)
	go func() {
		err := agentHandshake(srv, testToken, &seen)
		srv.send(errorMsg{Type: msgError, Reason: "authentication failed"}, time.Second)
		errc <- err
	}()
	_, err := clientHandshake(cli, []byte("another-token-0123456789"))
	if !errors.Is(err, ErrAuth) {
		t.Errorf("client: %v, want ErrAuth", err)
	}
	if err := <-errc; !errors.Is(err, ErrAuth) {
		t.Errorf("agent: %v, want ErrAuth", err)
	}
}

// A fake agent without the token cannot make the client believe it, even
// when it follows the protocol.
func TestHandshakeFakeAgent(t *testing.T) {
	cli, fake := pipe(t)
	go func() {
		var h helloMsg
		fake.expect(msgHello, &h, time.Second)
		sn, _ := newNonce()
		fake.send(challengeMsg{Type: msgChallenge, Version: protoVersion, Nonce: sn}, time.Second)
		var a authMsg
		fake.limit = maxFrame
		fake.expect(msgAuth, &a, time.Second)
		wrong := mac([]byte("not-the-token-0123456789"), serverLabel, sn, a.Nonce)
		fake.send(welcomeMsg{Type: msgWelcome, MAC: wrong}, time.Second)
	}()
	if _, err := clientHandshake(cli, testToken); !errors.Is(err, ErrAuth) {
		t.Fatalf("client: %v, want ErrAuth", err)
	}
}

// A recorded handshake replayed against a fresh challenge fails, and the
// agent names it a replay.
func TestHandshakeReplay(t *testing.T) {
	var seen nonceLog
	// Record a successful exchange.
	cli, srv := pipe(t)
	rec := &recorder{c: cli.c}
	cli.c, cli.r = rec, rec
	go agentHandshake(srv, testToken, &seen)
	if _, err := clientHandshake(cli, testToken); err != nil {
		t.Fatal(err)
	}
	// Replay the client's frames verbatim on a new connection.
	cli2, srv2 := pipe(t)
	errc := make(chan error, 1)
	go func() { errc <- agentHandshake(srv2, testToken, &seen) }()
	go func() {
		cli2.c.Write(rec.frames[0]) // hello
		readFrame(cli2.c, maxFrame) // a fresh challenge, ignored
		cli2.c.Write(rec.frames[1]) // the recorded auth
	}()
	if err := <-errc; !errors.Is(err, errReplay) {
		t.Errorf("replay: %v, want errReplay", err)
	}
}

// recorder keeps each Write (one frame each) of a connection.
type recorder struct {
	net.Conn
	c      net.Conn
	frames [][]byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.frames = append(r.frames, bytes.Clone(p))
	return r.c.Write(p)
}
func (r *recorder) Read(p []byte) (int, error)         { return r.c.Read(p) }
func (r *recorder) SetReadDeadline(d time.Time) error  { return r.c.SetReadDeadline(d) }
func (r *recorder) SetWriteDeadline(d time.Time) error { return r.c.SetWriteDeadline(d) }

func TestNonceLogBounded(t *testing.T) {
	var l nonceLog
	first := bytes.Repeat([]byte{1}, nonceSize)
	l.add(first)
	for i := range nonceLogSize {
		n := make([]byte, nonceSize)
		n[0], n[1], n[2] = 2, byte(i), byte(i>>8)
		l.add(n)
	}
	if l.has(first) || len(l.set) != nonceLogSize {
		t.Errorf("log holds %d nonces, first still there: %v", len(l.set), l.has(first))
	}
}

// FuzzHandshake plays a client with arbitrary hello and auth frames against
// the agent, and an agent with arbitrary challenge and welcome frames
// against the client. Neither may panic, hang or accept: without the token
// nothing can make a valid MAC over a fresh nonce.
func FuzzHandshake(f *testing.F) {
	f.Add([]byte(`{"type":"hello","version":1}`), []byte(`{"type":"auth","nonce":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=","mac":"AAAA"}`))
	f.Add([]byte(`{"type":"hello","version":2}`), []byte(`{"type":"error","reason":"x"}`))
	f.Add([]byte(`{"type":"challenge","version":1,"nonce":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}`), []byte(`{"type":"welcome","mac":"AAAA","host":{}}`))
	f.Add([]byte(`{}`), []byte(`{"type":"busy","reason":"a test is running"}`))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		if len(first) == 0 || len(second) == 0 || len(first) > maxFrame || len(second) > maxFrame {
			return
		}
		if err := fuzzAgent(first, second); err == nil {
			t.Fatal("the agent accepted a client without the token")
		}
		if err := fuzzClient(first, second); err == nil {
			t.Fatal("the client accepted an agent without the token")
		}
	})
}

// fuzzAgent runs the agent's handshake against a client sending hello,
// reading the challenge, then sending auth.
func fuzzAgent(hello, auth []byte) error {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		writeFrame(a, hello)
		a.SetReadDeadline(time.Now().Add(time.Second))
		readFrame(a, maxFrame)
		writeFrame(a, auth)
		readFrame(a, maxFrame)
	}()
	var seen nonceLog
	err := agentHandshake(newConn(b), testToken, &seen)
	return err
}

// fuzzClient runs the client's handshake against an agent answering its
// hello with challenge and its auth with welcome.
func fuzzClient(challenge, welcome []byte) error {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		b.SetReadDeadline(time.Now().Add(time.Second))
		readFrame(b, maxFrame)
		writeFrame(b, challenge)
		readFrame(b, maxFrame)
		writeFrame(b, welcome)
	}()
	_, err := clientHandshake(newConn(a), testToken)
	return err
}
