package ethtool

import "fmt"

// Extended link states (enum ethtool_link_ext_state and its substate
// enums in the kernel's uapi ethtool.h): why a driver says a link is down.
var extStates = []string{
	"Autoneg", "Link training failure", "Logical mismatch", "Bad signal integrity", "No cable",
	"Cable issue", "EEPROM issue", "Calibration failure", "Power budget exceeded", "Overheat",
	"Module", "OTP speed violation", "BMC request down",
}

// extSubstates are indexed by state, then by substate - 1.
var extSubstates = map[int][]string{
	0: {"No partner detected", "Ack not received", "Next page exchange failed",
		"No partner detected during force mode", "FEC mismatch during override", "No HCD"},
	1: {"KR frame lock not acquired", "KR link inhibit timeout",
		"KR link partner did not set receiver ready", "Remote side is not ready yet"},
	2: {"PCS did not acquire block lock", "PCS did not acquire AM lock", "PCS did not get align_status",
		"FC FEC is not locked", "RS FEC is not locked"},
	3:  {"Large number of physical errors", "Unsupported rate", "Serdes reference clock lost", "Serdes ALOS"},
	5:  {"Unsupported cable", "Cable test failure"},
	10: {"CMIS module is not in ModuleReady state"},
}

// extStateNames names an extended state and substate (sub < 1: none).
func extStateNames(state, sub int) (string, string) {
	s := fmt.Sprintf("state %d", state)
	if state >= 0 && state < len(extStates) {
		s = extStates[state]
	}
	if sub < 1 {
		return s, ""
	}
	if subs := extSubstates[state]; sub <= len(subs) {
		return s, subs[sub-1]
	}
	return s, fmt.Sprintf("substate %d", sub)
}
