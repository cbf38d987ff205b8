package agent

import (
	"crypto/hmac"
	"encoding/binary"
	"fmt"
)

// A data connection starts with a preamble that names its test and stream
// and proves it comes from the client of that test:
//
//	"LRDATA02" ‖ test ID (16 random bytes, from the accept) ‖ stream index (4 bytes, big-endian)
//	‖ HMAC-SHA256(session's data key, test ID ‖ stream index)
//
// The test ID is no secret (the accept carries it in clear, under the
// frame's MAC); the proof needs the session key, which never travels. The
// agent takes each stream index of a test once: a preamble seen on the
// wire and replayed on another connection finds its index taken.
const (
	dataMagic       = "LRDATA02"
	testIDSize      = 16
	dataPreambleLen = len(dataMagic) + testIDSize + 4 + tagSize
)

// preamble is what the client sends first on data connection index.
func preamble(dataKey, testID []byte, index uint32) []byte {
	b := make([]byte, 0, dataPreambleLen)
	b = append(b, dataMagic...)
	b = append(b, testID...)
	b = binary.BigEndian.AppendUint32(b, index)
	return append(b, dataTag(dataKey, testID, index)...)
}

// dataHeader is a preamble as the agent reads it.
type dataHeader struct {
	testID []byte
	index  uint32
	tag    []byte
}

// parsePreamble splits a preamble (its length already read) and checks
// its magic.
func parsePreamble(b []byte) (dataHeader, error) {
	if len(b) != dataPreambleLen {
		return dataHeader{}, fmt.Errorf("%w: data preamble of %d bytes", errBadMessage, len(b))
	}
	if string(b[:len(dataMagic)]) != dataMagic {
		return dataHeader{}, fmt.Errorf("%w: data connection with magic %q (another protocol version?)", errBadMessage, b[:len(dataMagic)])
	}
	b = b[len(dataMagic):]
	return dataHeader{testID: b[:testIDSize], index: binary.BigEndian.Uint32(b[testIDSize:]), tag: b[testIDSize+4:]}, nil
}

// proves reports whether h was made with dataKey for testID.
func (h dataHeader) proves(dataKey, testID []byte) bool {
	return hmac.Equal(h.testID, testID) && hmac.Equal(h.tag, dataTag(dataKey, h.testID, h.index))
}
