package lab

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSteeringFor(t *testing.T) {
	s := steeringFor(3, []int{0, 1})
	// RX queue i to CPU i; TX queue i+1 from CPU i (the veth hands TX
	// queue q to the peer's RX queue q-1); TX queue 0 from no CPU; the
	// spare RX queue 2 wraps to CPU 0.
	wantRPS := [][]int{{0}, {1}, {0}}
	wantXPS := [][]int{{}, {0}, {1}}
	for q := range 3 {
		if !slices.Equal(s.RPS[q], wantRPS[q]) || !slices.Equal(s.XPS[q], wantXPS[q]) {
			t.Errorf("queue %d: rps %v xps %v, want %v %v", q, s.RPS[q], s.XPS[q], wantRPS[q], wantXPS[q])
		}
	}
	if !s.equal(steeringFor(3, []int{0, 1})) || s.equal(steeringFor(3, []int{0, 2})) {
		t.Error("equal does not compare the masks")
	}
}

func TestQueuesConfig(t *testing.T) {
	for _, q := range []int{-1, maxQueues + 1} {
		if _, err := (Config{Queues: q}).withDefaults(); err == nil || !strings.Contains(err.Error(), "queues") {
			t.Errorf("queues %d: err %v", q, err)
		}
	}
	c, err := Config{Queues: 3}.withDefaults()
	if err != nil || c.spec().Queues != 3 {
		t.Fatalf("queues 3: %v %+v", err, c.spec())
	}
	if c, _ := (Config{}).withDefaults(); c.spec().Queues != 1 {
		t.Errorf("default queues %d, want 1", c.spec().Queues)
	}
	r := newRecord(Config{Name: "x", Scenario: Healthy, Queues: 3}, phaseUp, time.Time{})
	if !r.sameAsk(Config{Name: "x", Scenario: Healthy, Queues: 3}) || r.sameAsk(Config{Name: "x", Scenario: Healthy}) {
		t.Error("the record does not tell queue counts apart")
	}
	if queuesPhrase(1) != "" || queuesPhrase(3) != ", 3 queues" {
		t.Errorf("queuesPhrase: %q %q", queuesPhrase(1), queuesPhrase(3))
	}
}
