package agent

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

func frame(body []byte) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(len(body)))
}

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	for _, body := range [][]byte{[]byte(`{"type":"hello","version":1}`), bytes.Repeat([]byte("x"), maxHandshakeFrame)} {
		if err := writeFrame(&buf, body); err != nil {
			t.Fatal(err)
		}
		got, err := readFrame(&buf, maxHandshakeFrame)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("round trip of %d bytes: %v", len(body), err)
		}
	}
}

func TestFrameRefused(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"oversized", append(frame(make([]byte, maxHandshakeFrame+1)), 'x'), errFrameTooLarge},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff}, errFrameTooLarge},
		{"empty", []byte{0, 0, 0, 0}, errFrameEmpty},
		{"truncated body", append(frame(make([]byte, 10)), "abc"...), errFrameTrunc},
		{"truncated length", []byte{0, 0}, errFrameTrunc},
		{"nothing", nil, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &countReader{r: bytes.NewReader(tt.in)}
			_, err := readFrame(r, maxHandshakeFrame)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tt.want == errFrameTooLarge && r.n > 4 {
				t.Errorf("read %d bytes of an oversized frame; the length alone must refuse it", r.n)
			}
		})
	}
	if err := writeFrame(io.Discard, make([]byte, maxDoctorFrame+1)); !errors.Is(err, errFrameTooLarge) {
		t.Errorf("WriteFrame of an oversized body: %v", err)
	}
}

type countReader struct {
	r io.Reader
	n int
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestMessageType(t *testing.T) {
	for _, in := range []string{``, `[]`, `{}`, `{"type":""}`, `{"type":1}`, `nul`} {
		if _, err := messageType([]byte(in)); !errors.Is(err, errBadMessage) {
			t.Errorf("%q: err = %v", in, err)
		}
	}
	if typ, err := messageType([]byte(`{"type":"busy","reason":"x"}`)); err != nil || typ != "busy" {
		t.Errorf("busy: %q %v", typ, err)
	}
	var pe *PeerError
	if err := decodeAs("busy", []byte(`{"type":"busy","reason":"x"}`), msgAccept, nil); !errors.As(err, &pe) || !pe.Busy {
		t.Errorf("busy decodes to %v", err)
	}
}

// FuzzReadFrame feeds the decoder arbitrary bytes: it must never panic,
// never return a frame over the limit, never read past one frame's bound,
// and what it returns must round-trip.
func FuzzReadFrame(f *testing.F) {
	f.Add(append(frame([]byte(`{"type":"hello","version":1}`)), `{"type":"hello","version":1}`...))
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3})
	f.Add(append(frame(make([]byte, 5)), "ab"...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &countReader{r: bytes.NewReader(data)}
		for i := 0; i < 8; i++ {
			before := r.n
			body, err := readFrame(r, maxHandshakeFrame)
			if r.n-before > 4+maxHandshakeFrame {
				t.Fatalf("one frame read %d bytes", r.n-before)
			}
			if err != nil {
				return
			}
			if len(body) == 0 || len(body) > maxHandshakeFrame {
				t.Fatalf("frame of %d bytes accepted", len(body))
			}
			var buf bytes.Buffer
			if err := writeFrame(&buf, body); err != nil {
				t.Fatal(err)
			}
			again, err := readFrame(&buf, maxHandshakeFrame)
			if err != nil || !bytes.Equal(again, body) {
				t.Fatalf("round trip: %v", err)
			}
			if typ, err := messageType(body); err == nil {
				_ = decodeAs(typ, body, msgRequest, &requestMsg{})
			}
		}
	})
}

// jsonOf encodes m as a frame body.
func jsonOf(m any) ([]byte, error) { return json.Marshal(m) }

// TestWriteFrameEdges: the writer sends up to the largest frame any
// reader takes (a doctor report) and refuses an empty or larger body.
func TestWriteFrameEdges(t *testing.T) {
	var buf bytes.Buffer
	if err := writeFrame(&buf, make([]byte, maxDoctorFrame)); err != nil || buf.Len() != 4+maxDoctorFrame {
		t.Errorf("a frame of the largest size: %v, %d bytes written", err, buf.Len())
	}
	for _, n := range []int{0, maxDoctorFrame + 1} {
		buf.Reset()
		if err := writeFrame(&buf, make([]byte, n)); !errors.Is(err, errFrameTooLarge) || buf.Len() != 0 {
			t.Errorf("a body of %d bytes: %v, %d bytes written", n, err, buf.Len())
		}
	}
}
