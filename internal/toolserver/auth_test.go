package toolserver

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// TestToolCreds: both ends derive the same credentials from the same
// secret, others from another, and the authorized-users line is iperf3's
// format.
func TestToolCreds(t *testing.T) {
	s1, s2 := make([]byte, 32), make([]byte, 32)
	s2[0] = 1
	a, _ := credsFrom(s1)
	b, _ := credsFrom(s1)
	c, _ := credsFrom(s2)
	if a != b || a.password == c.password || a.permitKey == c.permitKey || a.password == a.permitKey {
		t.Errorf("credentials: %+v %+v %+v", a, b, c)
	}
	sum := sha256.Sum256([]byte("{" + a.user + "}" + a.password))
	if want := a.user + "," + hex.EncodeToString(sum[:]) + "\n"; a.authorizedUser() != want {
		t.Errorf("authorized user line %q, want %q", a.authorizedUser(), want)
	}
	if _, err := credsFrom(nil); err == nil {
		t.Error("credentials from no secret")
	}
}
