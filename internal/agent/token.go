package agent

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// TokenEnv is the environment variable a client reads its token from when
// no token file is given.
const TokenEnv = "LINERATE_TOKEN"

// MinTokenLen is the shortest token accepted: 16 characters. Generated
// tokens are 64 hex characters (256 bits).
const MinTokenLen = 16

// maxTokenFile bounds a token file; a token is one short line.
const maxTokenFile = 4 << 10

// GenerateToken returns a fresh random token: 32 bytes, hex-encoded.
func GenerateToken() ([]byte, error) {
	b, err := newNonce()
	if err != nil {
		return nil, err
	}
	return []byte(hex.EncodeToString(b)), nil
}

// ReadTokenFile reads a token from path: the file's content without
// surrounding white space. It refuses a file that its group or other users
// may read or write, as ssh refuses such a private key: the token is a
// password.
func ReadTokenFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("token file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o066 != 0 {
		return nil, fmt.Errorf("token file %s has mode %04o: other users may read or change it; run 'chmod 600 %s'", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	if len(b) > maxTokenFile {
		return nil, fmt.Errorf("token file %s is larger than %d bytes: is it the right file?", path, maxTokenFile)
	}
	return CheckToken(b)
}

// CheckToken trims white space around a token and checks its length.
func CheckToken(b []byte) ([]byte, error) {
	tok := bytes.TrimSpace(b)
	if len(tok) < MinTokenLen {
		return nil, fmt.Errorf("%w: the token has %d characters, at least %d are needed (a generated one has 64)", errWeakToken, len(tok), MinTokenLen)
	}
	return tok, nil
}

var errWeakToken = errors.New("token too short")
