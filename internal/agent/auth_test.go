package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/result"
)

// Tokens of the tests: 256 random bits each, as GenerateToken makes them.
var (
	testToken  = []byte("5f0c2a8e91d7b3460e6a1c9f24b85d07a3e1f69c0b2d48e7156a9c3f0d8e2b71")
	otherToken = []byte("c93e07b1a45f28d60e9b13c7f4a2865d0b7e39a1c6f84d25e0a7b3169cd4f802")
)

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

// TestHandshake: both ends authenticate, derive the same keys, and MAC
// every frame after: each reads what the other sent.
func TestHandshake(t *testing.T) {
	cli, srv := pipe(t)
	var seen nonceLog
	errc := make(chan error, 1)
	go func() {
		err := agentHandshake(srv, testToken, &seen)
		if err == nil {
			var m bareMsg
			err = srv.expect(msgStart, &m, time.Second)
		}
		if err == nil {
			err = srv.send(bareMsg{Type: msgStop}, time.Second)
		}
		errc <- err
	}()
	host, _, err := clientHandshake(cli, testToken)
	if err != nil {
		t.Fatal(err)
	}
	if host.Hostname != "agent" {
		t.Errorf("host = %+v", host)
	}
	if err := cli.send(bareMsg{Type: msgStart}, time.Second); err != nil {
		t.Fatal(err)
	}
	var m bareMsg
	if err := cli.expect(msgStop, &m, time.Second); err != nil {
		t.Fatalf("the client reading the agent's sealed frame: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if cli.out == nil || cli.in == nil || srv.out == nil || srv.in == nil {
		t.Error("a side does not MAC its frames after the handshake")
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
	_, _, err := clientHandshake(cli, otherToken)
	if !errors.Is(err, ErrAuth) {
		t.Errorf("client: %v, want ErrAuth", err)
	}
	if err := <-errc; !errors.Is(err, ErrAuth) {
		t.Errorf("agent: %v, want ErrAuth", err)
	}
	// The nonce of a failed handshake is not remembered: only token
	// holders change what the agent keeps.
	if n := len(seen.set); n != 0 {
		t.Errorf("a failed handshake left %d nonces in the log", n)
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
		host := []byte(`{"hostname":"fake"}`)
		fake.send(welcomeMsg{Type: msgWelcome, MAC: mac(otherToken, serverLabel, sn, a.Nonce, host), Host: host}, time.Second)
	}()
	if _, _, err := clientHandshake(cli, testToken); !errors.Is(err, ErrAuth) {
		t.Fatalf("client: %v, want ErrAuth", err)
	}
}

// TestHandshakeLabels: the two directions' proofs and keys differ, so
// neither end is an oracle for the other and nothing sent one way passes
// the other way: a fake agent reflecting the client's own proof, or the
// client's sealed frames, gets nowhere.
func TestHandshakeLabels(t *testing.T) {
	sn, cn := bytes.Repeat([]byte{1}, nonceSize), bytes.Repeat([]byte{2}, nonceSize)
	if bytes.Equal(mac(testToken, clientLabel, sn, cn), mac(testToken, serverLabel, sn, cn)) {
		t.Fatal("the client's and the agent's handshake MACs are equal: a fake agent can reflect the client's")
	}
	k, err := deriveKeys(testToken, sn, cn)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(k.clientToAgent, k.agentToClient) || bytes.Equal(k.clientToAgent, k.data) || bytes.Equal(k.agentToClient, k.data) {
		t.Fatal("session keys of different uses are equal")
	}
	// The client's first sealed frame, reflected back as the agent's
	// first, fails.
	client, agent := &conn{}, &conn{}
	client.seal(k, false)
	agent.seal(k, true)
	body := []byte(`{"type":"stop"}`)
	frame := append(append([]byte{}, body...), client.out.tag(body)...)
	if _, err := client.in.open(frame); !errors.Is(err, errBadMAC) {
		t.Errorf("the client accepted its own frame reflected back: %v", err)
	}
	if got, err := agent.in.open(frame); err != nil || !bytes.Equal(got, body) {
		t.Errorf("the agent refused the client's frame: %v", err)
	}
}

// A fake agent that reflects the client's proof as its own is refused.
func TestHandshakeReflectedProof(t *testing.T) {
	cli, fake := pipe(t)
	go func() {
		var h helloMsg
		fake.expect(msgHello, &h, time.Second)
		sn, _ := newNonce()
		fake.send(challengeMsg{Type: msgChallenge, Version: protoVersion, Nonce: sn}, time.Second)
		var a authMsg
		fake.limit = maxFrame
		fake.expect(msgAuth, &a, time.Second)
		fake.send(welcomeMsg{Type: msgWelcome, MAC: a.MAC, Host: []byte(`{}`)}, time.Second)
	}()
	if _, _, err := clientHandshake(cli, testToken); !errors.Is(err, ErrAuth) {
		t.Fatalf("client: %v, want ErrAuth", err)
	}
}

// TestHandshakeNonceLength: a nonce of the wrong length, or none, is
// refused before anything uses it, on both ends, and never panics.
func TestHandshakeNonceLength(t *testing.T) {
	for _, n := range []int{0, 1, nonceSize - 1, nonceSize + 1, 1024} {
		nonce := make([]byte, n)
		auth, _ := jsonOf(authMsg{Type: msgAuth, Nonce: nonce, MAC: make([]byte, 32)})
		if n == 0 {
			auth = []byte(`{"type":"auth"}`)
		}
		if err := fuzzAgent([]byte(`{"type":"hello","version":2}`), auth); !errors.Is(err, errBadMessage) {
			t.Errorf("agent, client nonce of %d bytes: %v, want errBadMessage", n, err)
		}
		ch, _ := jsonOf(challengeMsg{Type: msgChallenge, Version: protoVersion, Nonce: nonce})
		if err := fuzzClient(ch, []byte(`{"type":"welcome"}`)); !errors.Is(err, errBadMessage) {
			t.Errorf("client, challenge nonce of %d bytes: %v, want errBadMessage", n, err)
		}
	}
}

// TestOldClient: a client of protocol 1 is told which version the agent
// speaks, and the agent says why it refused.
func TestOldClient(t *testing.T) {
	err := fuzzAgent([]byte(`{"type":"hello","version":1}`), []byte(`{"type":"auth"}`))
	if !errors.Is(err, errVersion) || !strings.Contains(err.Error(), "protocol 1, the agent 2") {
		t.Errorf("agent: %v", err)
	}
	err = fuzzClient([]byte(`{"type":"challenge","version":1,"nonce":"`+base64.StdEncoding.EncodeToString(make([]byte, nonceSize))+`"}`), []byte(`{}`))
	if !errors.Is(err, errVersion) || !strings.Contains(err.Error(), "run the same linerate version on both ends") {
		t.Errorf("client: %v", err)
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
	if _, _, err := clientHandshake(cli, testToken); err != nil {
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

// TestSealedFrames: after the handshake a frame that is altered, dropped,
// replayed, reordered or injected fails its MAC.
func TestSealedFrames(t *testing.T) {
	k, err := deriveKeys(testToken, bytes.Repeat([]byte{3}, nonceSize), bytes.Repeat([]byte{4}, nonceSize))
	if err != nil {
		t.Fatal(err)
	}
	frames := func() [][]byte {
		c := &conn{}
		c.seal(k, false)
		var out [][]byte
		for _, b := range []string{`{"type":"start"}`, `{"type":"stop"}`, `{"type":"stop"}`} {
			out = append(out, append([]byte(b), c.out.tag([]byte(b))...))
		}
		return out
	}
	tests := []struct {
		name  string
		order func(f [][]byte) [][]byte
	}{
		{"in order", func(f [][]byte) [][]byte { return f }},
		{"altered", func(f [][]byte) [][]byte { g := bytes.Clone(f[0]); g[10] ^= 1; return [][]byte{g} }},
		{"dropped", func(f [][]byte) [][]byte { return f[1:] }},
		{"replayed", func(f [][]byte) [][]byte { return [][]byte{f[0], f[0]} }},
		{"reordered", func(f [][]byte) [][]byte { return [][]byte{f[1], f[0]} }},
		{"injected", func(f [][]byte) [][]byte {
			return [][]byte{append([]byte(`{"type":"stop"}`), make([]byte, tagSize)...)}
		}},
		{"tag cut", func(f [][]byte) [][]byte { return [][]byte{f[0][:tagSize]} }},
		{"empty body", func([][]byte) [][]byte {
			// A tag alone, and a good one: the first frame's MAC over
			// nothing. No message is empty, so no frame is a tag alone.
			c := &conn{}
			c.seal(k, false)
			return [][]byte{c.out.tag(nil)}
		}},
	}
	for _, tt := range tests {
		agent := &conn{}
		agent.seal(k, true)
		var failed error
		for _, f := range tt.order(frames()) {
			if _, err := agent.in.open(f); err != nil {
				failed = err
				break
			}
		}
		if (tt.name == "in order") != (failed == nil) {
			t.Errorf("%s: %v", tt.name, failed)
		}
		if failed != nil && !errors.Is(failed, errBadMAC) {
			t.Errorf("%s: %v, want errBadMAC", tt.name, failed)
		}
	}
}

// TestWeakTokens: a token that cannot hold 128 random bits is refused with
// one line saying how to make one.
func TestWeakTokens(t *testing.T) {
	for _, tok := range []string{
		"x", "", "   ", "test-token-0123456789abcdef", "correct horse battery staple",
		strings.Repeat("a", 64), "0123456789abcdef0123456789abcdef", strings.Repeat("abc123", 8),
		"00112233445566778899aabbccddeeff", "fedcba9876543210fedcba9876543210",
		"5f0c2a8e91d7b3460e6a1c9f24b85d0", // 31 hex characters: 124 bits
		"hunter2hunter2hunter2hunter2!!",
	} {
		_, err := CheckToken([]byte(tok))
		if !errors.Is(err, errWeakToken) {
			t.Errorf("CheckToken(%q) = %v, want a weak-token error", tok, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "linerate serve --new-token-file") {
			t.Errorf("CheckToken(%q): %q is not one line saying how to make a token", tok, msg)
		}
	}
	for _, tok := range [][]byte{testToken, otherToken, []byte("  " + string(testToken) + "\n"),
		[]byte("q1Jk9aZ0/7XbLmP2cV4rT8sW6eY3uH5nD1gF0iR+oEw="), // openssl rand -base64 32
		[]byte("5f0c2a8e91d7b3460e6a1c9f24b85d07")} {           // 128 bits of hex
		if _, err := CheckToken(tok); err != nil {
			t.Errorf("CheckToken(%q): %v", tok, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := (&Server{Token: []byte("sixteen-chars-ok")}).Serve(ctx, ln); !errors.Is(err, errWeakToken) {
		t.Errorf("Serve with a weak token: %v", err)
	}
	if _, err := Run(t.Context(), Config{Peer: "127.0.0.1:1", Token: []byte("sixteen-chars-ok")}); !errors.Is(err, errWeakToken) {
		t.Errorf("Run with a weak token: %v", err)
	}
}

// TestCheckTokenRandom: random tokens of 128 bits and more always pass.
func TestCheckTokenRandom(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 10000
	}
	for range n {
		b := make([]byte, 16)
		rand.Read(b)
		for _, tok := range []string{hex.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b), base64.StdEncoding.EncodeToString(b)} {
			if _, err := CheckToken([]byte(tok)); err != nil {
				t.Fatalf("a random token was refused: %q: %v", tok, err)
			}
		}
	}
}

// TestNewTokenFile: the file is 0600, holds a token CheckToken accepts,
// and is never overwritten.
func TestNewTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	if err := WriteNewToken(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %04o, want 0600", fi.Mode().Perm())
	}
	tok, err := ReadTokenFile(path)
	if err != nil || len(tok) != 64 {
		t.Fatalf("ReadTokenFile = %q, %v", tok, err)
	}
	if err := WriteNewToken(path); err == nil || !strings.Contains(err.Error(), "does not overwrite") {
		t.Errorf("a second WriteNewToken: %v", err)
	}
	again, _ := ReadTokenFile(path)
	if !bytes.Equal(again, tok) {
		t.Error("the token changed")
	}
}

// FuzzHandshake plays a client with arbitrary hello and auth frames against
// the agent, and an agent with arbitrary challenge and welcome frames
// against the client. Neither may panic, hang or accept: without the token
// nothing can make a valid MAC over a fresh nonce.
func FuzzHandshake(f *testing.F) {
	zero := base64.StdEncoding.EncodeToString(make([]byte, nonceSize))
	short := base64.StdEncoding.EncodeToString(make([]byte, nonceSize-1))
	long := base64.StdEncoding.EncodeToString(make([]byte, nonceSize+1))
	f.Add([]byte(`{"type":"hello","version":2}`), []byte(`{"type":"auth","nonce":"`+zero+`","mac":"AAAA"}`))
	f.Add([]byte(`{"type":"hello","version":2}`), []byte(`{"type":"auth"}`))
	f.Add([]byte(`{"type":"hello","version":2}`), []byte(`{"type":"auth","nonce":"`+short+`"}`))
	f.Add([]byte(`{"type":"hello","version":2}`), []byte(`{"type":"auth","nonce":"`+long+`"}`))
	f.Add([]byte(`{"tYpe":"hello","version":2}`), []byte(`{"tYpe":"auth"}`))
	f.Add([]byte(`{"type":"hello","version":1}`), []byte(`{"type":"error","reason":"x"}`))
	f.Add([]byte(`{"type":"challenge","version":2,"nonce":"`+zero+`"}`), []byte(`{"type":"welcome","mac":"AAAA","host":{}}`))
	f.Add([]byte(`{"type":"challenge","version":2,"nonce":"`+short+`"}`), []byte(`{"type":"welcome"}`))
	f.Add([]byte(`{"type":"challenge","version":2}`), []byte(`{"type":"welcome","host":null}`))
	f.Add([]byte(`{}`), []byte(`{"type":"busy","reason":"a test is running"}`))
	id := base64.StdEncoding.EncodeToString(make([]byte, ticketIDSize))
	f.Add([]byte(`{"type":"hello","version":2}`), []byte(`{"type":"auth","nonce":"`+zero+`","mac":"AAAA","ticket":{"from":"h01","to":"h02","peer":"127.0.0.1:5301","expires_ms":4102444800000,"id":"`+id+`"}}`))
	f.Add([]byte(`{"type":"hello","version":2}`), []byte(`{"type":"auth","nonce":"`+zero+`","mac":"AAAA","ticket":{"to":"h02","id":"AAAA"}}`))
	f.Add([]byte(`{"type":"challenge","version":2,"nonce":"`+zero+`","node":"h02"}`), []byte(`{"type":"welcome","mac":"AAAA","host":{}}`))
	f.Add([]byte(`{"type":"challenge","version":2,"nonce":"`+zero+`","node":"-x y"}`), []byte(`{"type":"welcome"}`))
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
// reading the challenge, then sending auth: an agent of the shared token,
// then one of node h02's key. It returns nil if either accepted.
func fuzzAgent(hello, auth []byte) error {
	k, err := NodeKey(testToken, "h02")
	if err != nil {
		return err
	}
	for _, tok := range [][]byte{testToken, k} {
		if err = fuzzAgentWith(tok, hello, auth); err == nil {
			return nil
		}
	}
	return err
}

func fuzzAgentWith(token, hello, auth []byte) error {
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
	err := agentHandshake(newConn(b), token, &seen)
	if err == nil && len(seen.set) != 1 {
		return errors.New("accepted without remembering the nonce")
	}
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
	_, _, err := clientHandshake(newConn(a), testToken)
	return err
}

// TestReadTokenFile: a token file must be a small regular file only its
// owner can read, holding a strong token.
func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	tests := []struct {
		path string
		want string
	}{
		{dir, "not a regular file"},
		{write("open", testToken, 0o644), "chmod 600"},
		{write("big", bytes.Repeat(testToken, 100), 0o600), "larger than 4096 bytes"},
		{write("weak", []byte("0123456789abcdef0123456789abcdef\n"), 0o600), "weak token"},
		{filepath.Join(dir, "missing"), "no such file"},
	}
	for _, tt := range tests {
		if _, err := ReadTokenFile(tt.path); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.path, err, tt.want)
		}
	}
	if tok, err := ReadTokenFile(write("good", append(testToken, '\n'), 0o600)); err != nil || !bytes.Equal(tok, testToken) {
		t.Errorf("a good token file: %q, %v", tok, err)
	}
}
