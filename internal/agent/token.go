package agent

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// TokenEnv is the environment variable a client reads its token from when
// no token file is given.
const TokenEnv = "LINERATE_TOKEN"

// MinTokenBits is the least randomness a token must be able to hold. A
// recorded handshake lets anyone try tokens offline at the speed of
// HMAC-SHA256, so a token must be a random key, not a word: 2^128 guesses
// are out of anyone's reach. Generated tokens hold 256 bits.
const MinTokenBits = 128

// maxTokenFile bounds a token file; a token is one short line.
const maxTokenFile = 4 << 10

// howToMakeToken ends every refusal of a token: what to do instead.
const howToMakeToken = "make one with 'linerate serve --new-token-file FILE' and give that file to both ends (--token-file)"

var errWeakToken = errors.New("weak token")

// GenerateToken returns a fresh random token: 32 bytes, hex-encoded.
func GenerateToken() ([]byte, error) {
	b, err := newNonce()
	if err != nil {
		return nil, err
	}
	return []byte(hex.EncodeToString(b)), nil
}

// WriteNewToken makes a token and writes it to path, readable by its
// owner only. It never overwrites: an existing file may be the token
// other hosts already hold.
func WriteNewToken(path string) error {
	tok, err := GenerateToken()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists: linerate does not overwrite a token (other hosts may hold it); remove it first or pick another file", path)
		}
		return fmt.Errorf("writing the token: %w", err)
	}
	_, err = f.Write(append(tok, '\n'))
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("writing the token to %s: %w", path, err)
	}
	return nil
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
	tok, err := CheckToken(b)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return tok, nil
}

// CheckToken trims white space around a token and refuses one that cannot
// be a random key of MinTokenBits: not hex or base64 (a passphrase), too
// short for 128 bits in its alphabet, or visibly not random (repeated,
// sequential or periodic characters). The error is one line that says how
// to make a good one.
//
// A node key ("node-key NAME HEX", NodeKey) passes when its name and its
// 256-bit key are well formed.
func CheckToken(b []byte) ([]byte, error) {
	tok := bytes.TrimSpace(b)
	if bytes.HasPrefix(tok, []byte(nodeKeyPrefix)) {
		if _, err := parseKey(tok); err != nil {
			return nil, err
		}
		return tok, nil
	}
	alphabet, perChar := tokenAlphabet(tok)
	if len(tok) == 0 {
		return nil, fmt.Errorf("%w: the token is empty; %s", errWeakToken, howToMakeToken)
	}
	if alphabet == "" {
		return nil, fmt.Errorf("%w: the token is not hex or base64 (a passphrase?), so it holds less than %d random bits; %s", errWeakToken, MinTokenBits, howToMakeToken)
	}
	if len(tok)*perChar < MinTokenBits {
		return nil, fmt.Errorf("%w: %d characters of %s hold at most %d bits, at least %d random bits are needed; %s",
			errWeakToken, len(tok), alphabet, len(tok)*perChar, MinTokenBits, howToMakeToken)
	}
	if why := notRandom(tok); why != "" {
		return nil, fmt.Errorf("%w: the token is not random (%s); %s", errWeakToken, why, howToMakeToken)
	}
	return tok, nil
}

// tokenAlphabet names the alphabet of tok and the bits each of its
// characters can carry: hex 4, base64 (standard or URL, padding at the
// end) 6; "" for anything else.
func tokenAlphabet(tok []byte) (string, int) {
	isHex := true
	for _, c := range tok {
		if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
			isHex = false
			break
		}
	}
	if isHex {
		return "hex", 4
	}
	body := bytes.TrimRight(tok, "=")
	if len(tok)-len(body) > 2 {
		return "", 0
	}
	for _, c := range body {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("+/-_", rune(c))) {
			return "", 0
		}
	}
	return "base64", 6
}

// notRandom says why tok cannot have come from a random generator, or ""
// when nothing shows. The tests are loose enough that a random token of
// 128 bits or more never fails them (TestCheckTokenRandom tries a million),
// and catch what people type: "aaaa…", "0123456789abcdef…", "abcabc…",
// "00112233…".
func notRandom(tok []byte) string {
	n := len(tok)
	distinct := map[byte]bool{}
	same, up, down := 0, 0, 0
	for i, c := range tok {
		distinct[c] = true
		if i == 0 {
			continue
		}
		switch int(c) - int(tok[i-1]) {
		case 0:
			same++
		case 1:
			up++
		case -1:
			down++
		}
	}
	if len(distinct) < 8 {
		return fmt.Sprintf("%d distinct characters", len(distinct))
	}
	if same >= n/2 {
		return "repeated characters"
	}
	if up > n/2 || down > n/2 {
		return "sequential characters"
	}
	for p := 1; p <= n/2; p++ {
		match := 0
		for i := 0; i+p < n; i++ {
			if tok[i] == tok[i+p] {
				match++
			}
		}
		if match*10 >= (n-p)*9 {
			return fmt.Sprintf("a pattern of %d characters repeated", p)
		}
	}
	return ""
}

// clientToken checks the token a client was given before it dials.
func clientToken(tok []byte) error {
	if len(tok) == 0 {
		return errors.New("no token: give the agent's token (--token-file or " + TokenEnv + ")")
	}
	_, err := CheckToken(tok)
	return err
}
