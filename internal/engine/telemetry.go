package engine

import "github.com/linerate/linerate/internal/telemetry"

// CPUSample is the load of one CPU, or of a whole host, over an interval
// (package telemetry samples it; the name stays here because it is part
// of the linerate.bench/v1 document).
type CPUSample = telemetry.CPUSample
