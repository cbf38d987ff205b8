package report

import (
	"time"

	"github.com/linerate/linerate/internal/c2c"
)

// ryzenX4Matrix is the lower half of the matrix the 100 GbE home lab's
// owner measured on vulture (Ryzen 9 9900X) with core-to-core-latency: one way, ns, CPUs
// 0-11, the mean of 300 samples of 1000 round trips per pair (that tool
// prints means).
var ryzenX4Matrix = [][]float64{
	{},
	{19},
	{19, 20},
	{20, 18, 21},
	{19, 21, 18, 20},
	{22, 19, 19, 21, 22},
	{214, 221, 214, 221, 207, 213},
	{222, 219, 224, 219, 217, 225, 20},
	{210, 228, 206, 226, 207, 209, 19, 22},
	{219, 228, 216, 219, 210, 216, 21, 19, 22},
	{211, 214, 208, 212, 216, 217, 20, 23, 20, 20},
	{215, 216, 214, 217, 211, 214, 23, 21, 20, 23, 23},
}

// ryzenX4C2C is that matrix as a linerate.c2c/v1 result, judged against
// vulture's L3 domains.
func ryzenX4C2C(l3 [][]int) c2c.Result {
	n := len(ryzenX4Matrix)
	r := c2c.Result{Schema: c2c.Schema, Host: "vulture", CPUModel: "AMD Ryzen 9 9900X 12-Core Processor",
		MeasuredAt: time.Date(2025, 1, 20, 12, 0, 0, 0, time.UTC), Mode: c2c.ModeAll,
		Pairs: n * (n - 1) / 2, RoundTrips: 1000, Samples: 300,
		Notes: []string{"measured by nviennot/core-to-core-latency (means of the samples); linerate c2c reports medians"}}
	r.MatrixNs = make([][]*float64, n)
	for i := range n {
		r.CPUs = append(r.CPUs, i)
		r.MatrixNs[i] = make([]*float64, n)
	}
	for i, row := range ryzenX4Matrix {
		for j, v := range row {
			r.MatrixNs[i][j], r.MatrixNs[j][i] = &v, &v
		}
	}
	r.Judge(l3)
	return r
}
