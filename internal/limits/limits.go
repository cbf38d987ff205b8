// Package limits is the physics behind linerate's ceilings: the data rate of
// a PCIe link per generation and width and what it carries of packets, the
// TCP goodput of an Ethernet link per MTU, packet rates, bandwidth-delay
// products, the TCP window a socket buffer allows, and the bottleneck chain
// of one NIC (line rate → PCIe → TCP goodput).
//
// Hand-written: no Go library models PCIe line coding and TLP overhead,
// Ethernet framing costs or the kernel's buffer accounting. Each function
// states its model with worked numbers; README's arithmetic section
// collects them.
//
// Rates are in Gbit/s (10^9 bit/s) throughout, as Ethernet and PCIe quote
// them. The package does no I/O.
package limits

import (
	"fmt"
	"math"
	"strconv"
)

// Gbps is a data rate in Gbit/s (10^9 bit/s). It marshals to JSON rounded
// to two decimals, the precision the formulas justify (63.0154 → 63.02).
type Gbps float64

// Round returns g rounded to two decimals.
func (g Gbps) Round() Gbps {
	return Gbps(math.Round(float64(g)*100) / 100)
}

// String formats g with two decimals ("28.60").
func (g Gbps) String() string {
	return strconv.FormatFloat(float64(g), 'f', 2, 64)
}

// MarshalJSON writes g rounded to two decimals, in the shortest form
// (100, 28.6, 63.02). NaN and infinities are not rates and are an error.
func (g Gbps) MarshalJSON() ([]byte, error) {
	f := float64(g)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("limits: %v is not a rate in Gbit/s", f)
	}
	return strconv.AppendFloat(nil, float64(g.Round()), 'f', -1, 64), nil
}

// known reports whether g is a usable rate: positive and finite. Zero or
// negative input means "unknown" everywhere in this package.
func (g Gbps) known() bool {
	f := float64(g)
	return f > 0 && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// ptr returns a pointer to a copy of g, for the JSON fields that are null
// when unknown.
func (g Gbps) ptr() *Gbps {
	return &g
}
