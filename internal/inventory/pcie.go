package inventory

import (
	"errors"
	"path"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/limits"
)

// pcie reads a function's link attributes and, where the upstream port is
// a PCI bridge, the slot's capability.
//
// Our own reader rather than procfs's PciDevice: that parser rejects the
// pre-4.17 "8 GT/s" format (it wants "8.0 GT/s PCIe") and fails the whole
// device on one odd attribute, and it has no call for a bridge by address.
func (c *collector) pcie(pciDir string) *PCIe {
	p := &PCIe{}
	p.MaxGTs, p.MaxWidth = c.linkAttrs(pciDir, "max")
	p.CurGTs, p.CurWidth = c.linkAttrs(pciDir, "current")
	p.Reported = p.CurGTs != nil && p.CurWidth != nil
	bdf := path.Base(pciDir)
	if !p.Reported {
		c.note("%s: PCIe link not reported (no current_link_speed/width: a virtual or non-Express device)", bdf)
		return p
	}
	p.Downgraded = (p.MaxGTs != nil && *p.CurGTs < *p.MaxGTs) || (p.MaxWidth != nil && *p.CurWidth < *p.MaxWidth)
	c.payloadSizes(p, pciDir)
	mps := 256
	if p.MPS != nil {
		mps = *p.MPS
	} else {
		p.MPSAssumed = true
	}
	if bw, err := limits.PCIe(limits.PCIeLink{GTs: *p.CurGTs, Width: *p.CurWidth, MPS: mps}); err == nil {
		p.RawGbps = floatPtr(float64(bw.Raw.Round()))
		p.EffGbps = floatPtr(float64(bw.Effective.Round()))
	} else {
		c.note("%s: %v", bdf, err)
	}
	if parent := path.Dir(pciDir); isBDF(path.Base(parent)) {
		up := &Upstream{PCI: path.Base(parent)}
		up.MaxGTs, up.MaxWidth = c.linkAttrs(parent, "max")
		if up.MaxGTs != nil || up.MaxWidth != nil {
			p.Upstream = up
		}
	}
	return p
}

// linkAttrs reads {max,current}_link_{speed,width}. Values the kernel
// marks unknown ("Unknown", width 0 or 255) are nil.
func (c *collector) linkAttrs(dir, which string) (*float64, *int) {
	var gts *float64
	var width *int
	bdf := path.Base(dir)
	if s, err := c.fs.ReadString(dir + "/" + which + "_link_speed"); err == nil {
		if v, ok := limits.ParseLinkSpeed(s); ok {
			gts = floatPtr(v)
		} else if s != "" && s[0] != 'U' {
			c.note("%s: %s_link_speed %q is not a PCIe speed", bdf, which, s)
		}
	} else {
		c.noteErr(bdf+" "+which+" link speed", err)
	}
	if v, err := c.fs.ReadInt(dir + "/" + which + "_link_width"); err == nil {
		if v > 0 && v <= 32 {
			width = intPtr(int(v))
		}
	} else {
		c.noteErr(bdf+" "+which+" link width", err)
	}
	return gts, width
}

// payloadSizes reads MPS and MRRS from config space. Unprivileged reads
// of "config" stop at 64 bytes, before the capability list.
func (c *collector) payloadSizes(p *PCIe, pciDir string) {
	b, err := c.fs.ReadFile(pciDir + "/config")
	if err != nil {
		c.noteErr(path.Base(pciDir)+" config space", err)
		return
	}
	pc, err := hostfs.ParsePCIConfig(b)
	switch {
	case errors.Is(err, hostfs.ErrNoPCIeCap) && len(b) <= 64:
		c.note("%s: PCIe MPS/MRRS need root (config space beyond 64 bytes); assuming MPS 256", path.Base(pciDir))
	case err != nil:
		c.note("%s: config space: %v; assuming MPS 256", path.Base(pciDir), err)
	default:
		p.MPS, p.MRRS = intPtr(pc.MPS), intPtr(pc.MRRS)
	}
}
