package zzlookdemo

import (
	"context"
	"testing"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/telemetry"
)

func TestLive(t *testing.T) {
	lk, err := telemetry.Look(context.Background(), hostfs.Live(), telemetry.LookTime)
	t.Logf("%+v %v", lk, err)
}
