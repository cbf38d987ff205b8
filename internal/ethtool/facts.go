package ethtool

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/sff"
)

// Dir is where a host tree keeps an interface's live ethtool facts,
// beside sys/ and proc/.
func Dir(iface string) string { return "linerate/ethtool/" + iface }

// Names of the files below Dir (docs/schema/ethtool-*.schema.json).
const (
	FileLinkModes = "linkmodes.json"
	FileLinkState = "linkstate.json"
	FileFEC       = "fec.json"
	FileStats     = "stats.json"
	FileChannels  = "channels.json"
	FileRings     = "rings.json"
	FileNotRead   = "notread.json"
	DirModule     = "module-eeprom"
	FileModuleErr = "error"
)

// Facts is everything read about one interface. A fact that could not be
// read is nil, with the reason in NotRead under its key (FactLinkModes …).
type Facts struct {
	LinkModes *LinkModes
	LinkState *LinkState
	FEC       *FEC
	Stats     *Stats
	Channels  *Channels
	Rings     *Rings
	// Module holds the module memory pages read; ModuleError the failure
	// of the first read (one line: errno name, then the kernel's message),
	// which is how a dead, absent or unsupported module looks.
	Module      sff.Pages
	ModuleError string
	NotRead     map[string]string
}

// Keys of Facts.NotRead.
const (
	FactLinkModes     = "linkmodes"
	FactLinkState     = "linkstate"
	FactFEC           = "fec"
	FactDriverStats   = "stats.driver"
	FactStandardStats = "stats.standard"
	FactPause         = "pause"
	FactChannels      = "channels"
	FactRings         = "rings"
	FactModule        = "module"
)

// Collect reads every fact of iface through c. It never fails as a whole:
// what cannot be read is noted in NotRead with its reason.
func Collect(c *Client, iface string) *Facts {
	f := CollectExceptModule(c, iface)
	f.ReadModule(c, iface)
	return f
}

// CollectExceptModule reads every fact of iface but the module's memory,
// which is slow on some modules: a caller that reads often (a metrics
// scrape) reads the module less often, with ReadModule.
func CollectExceptModule(c *Client, iface string) *Facts {
	f := &Facts{NotRead: map[string]string{}}
	note := func(key string, err error) {
		if err != nil {
			f.NotRead[key] = Reason(err)
		}
	}
	var err error
	f.LinkModes, err = c.LinkModes(iface)
	note(FactLinkModes, err)
	f.LinkState, err = c.LinkState(iface)
	note(FactLinkState, err)
	f.FEC, err = c.FEC(iface)
	note(FactFEC, err)
	f.Channels, err = c.Channels(iface)
	note(FactChannels, err)
	f.Rings, err = c.Rings(iface)
	note(FactRings, err)

	st := &Stats{}
	if drv, err := c.DriverStats(iface); err == nil && len(drv) > 0 {
		st.Driver = drv
	} else {
		note(FactDriverStats, err)
	}
	if std, err := c.StandardStats(iface); err == nil {
		st.EthMAC, st.EthPHY, st.EthCtrl, st.RMON = std.EthMAC, std.EthPHY, std.EthCtrl, std.RMON
		if std.EthMAC == nil && std.EthPHY == nil && std.EthCtrl == nil && std.RMON == nil {
			f.NotRead[FactStandardStats] = "not reported by the driver (no eth-mac, eth-phy, eth-ctrl or rmon counters)"
		}
	} else {
		note(FactStandardStats, err)
	}
	if p, err := c.Pause(iface); err == nil {
		st.Pause = p
	} else {
		note(FactPause, err)
	}
	if st.Driver != nil || st.EthMAC != nil || st.EthPHY != nil || st.EthCtrl != nil || st.RMON != nil || st.Pause != nil {
		f.Stats = st
	}
	return f
}

// ReadModule reads module pages in ethtool's order into f.Module. A
// failure of the lower page is the module's error (f.ModuleError); a
// failure of a later page is noted and the decoder says what it lacks.
func (f *Facts) ReadModule(c *Client, iface string) {
	if f.NotRead == nil {
		f.NotRead = map[string]string{}
	}
	pages := sff.Pages{}
	tried := map[sff.Page]bool{}
	for {
		var next []sff.Page
		for _, p := range sff.Next(pages) {
			if !tried[p] {
				next = append(next, p)
			}
		}
		if len(next) == 0 {
			break
		}
		for _, p := range next {
			tried[p] = true
			b, err := c.ModuleEEPROM(iface, p)
			if errors.Is(err, ErrNoFamily) && p == sff.Lower {
				f.moduleIoctl(c, iface, err)
				return
			}
			if err != nil {
				if p == sff.Lower {
					f.ModuleError = ErrorLine(err)
					f.NotRead[FactModule] = moduleReason(err)
					return
				}
				f.NotRead[FactModule+" page "+p.Name()] = Reason(err)
				continue
			}
			pages[p] = b
		}
	}
	f.Module = pages
}

// moduleReason words a failed first read: no module data at all, or a
// module that does not answer.
func moduleReason(err error) string {
	switch {
	case IsNotSupported(err):
		return "no module data: the driver reads no module EEPROM (EOPNOTSUPP)"
	case IsPermission(err):
		return "module EEPROM not read (needs root)"
	}
	return "the module EEPROM cannot be read: " + ErrorLine(err)
}

// moduleIoctl reads module memory with ETHTOOL_GMODULEEEPROM on a kernel
// without MODULE_EEPROM_GET: one flat buffer of at most 640 bytes, which
// holds A0h then A2h for an SFP, or the lower page then upper pages 00h
// to 03h for a QSFP (CMIS modules give only the lower page, 00h and 01h:
// no lane monitors this way).
func (f *Facts) moduleIoctl(c *Client, iface string, nlErr error) {
	flat, err := c.io.moduleEEPROM(iface)
	if err != nil {
		werr := wrap("ETHTOOL_GMODULEEEPROM ioctl", iface, err)
		f.ModuleError = ErrorLine(werr)
		f.NotRead[FactModule] = moduleReason(werr)
		return
	}
	f.Module = splitFlat(flat)
	if len(f.Module) == 0 {
		f.ModuleError = "ENODATA: the ioctl returned no bytes"
		f.NotRead[FactModule] = "the module EEPROM cannot be read: the ioctl returned no bytes"
	}
}

// splitFlat cuts an ioctl module dump into pages.
func splitFlat(b []byte) sff.Pages {
	pages := sff.Pages{}
	if len(b) == 0 {
		return pages
	}
	sfp := b[0] == 0x02 || b[0] == 0x03 || b[0] == 0x0b
	for k := 0; k*sff.PageSize < len(b) && k < 5; k++ {
		chunk := b[k*sff.PageSize : min(len(b), (k+1)*sff.PageSize)]
		var p sff.Page
		switch {
		case k == 0:
			p = sff.Lower
		case k == 1:
			p = sff.Upper(0, 0)
		case sfp && k == 2:
			p = sff.Page{I2C: sff.AddrA2}
		case sfp && k == 3:
			p = sff.Page{I2C: sff.AddrA2, Offset: 128}
		case sfp:
			continue
		default:
			p = sff.Upper(uint8(k-1), 0)
		}
		pages[p] = slices.Clone(chunk)
	}
	return pages
}

// Files returns the facts as the files of a host tree, by path relative to
// Dir(iface). Facts not read have no file (their reason is in notread.json).
func (f *Facts) Files() (map[string][]byte, error) {
	out := map[string][]byte{}
	put := func(name string, v any, present bool) error {
		if !present {
			return nil
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding %s: %w", name, err)
		}
		out[name] = append(b, '\n')
		return nil
	}
	for _, e := range []struct {
		name    string
		v       any
		present bool
	}{
		{FileLinkModes, f.LinkModes, f.LinkModes != nil},
		{FileLinkState, f.LinkState, f.LinkState != nil},
		{FileFEC, f.FEC, f.FEC != nil},
		{FileStats, f.Stats, f.Stats != nil},
		{FileChannels, f.Channels, f.Channels != nil},
		{FileRings, f.Rings, f.Rings != nil},
		{FileNotRead, f.NotRead, len(f.NotRead) > 0},
	} {
		if err := put(e.name, e.v, e.present); err != nil {
			return nil, err
		}
	}
	for p, b := range f.Module {
		out[DirModule+"/"+p.Name()+".bin"] = slices.Clone(b)
	}
	if f.ModuleError != "" {
		out[DirModule+"/"+FileModuleErr] = []byte(f.ModuleError + "\n")
	}
	return out, nil
}

// Load reads the facts a host tree holds for iface. It returns nil, nil
// when the tree holds none (a tree captured without them, or an interface
// that was not queried), and an error naming the file when one is
// malformed.
func Load(fs *hostfs.FS, iface string) (*Facts, error) {
	dir := Dir(iface)
	if !fs.Exists(dir) {
		return nil, nil
	}
	f := &Facts{NotRead: map[string]string{}}
	for _, e := range []struct {
		name string
		into any
	}{
		{FileLinkModes, &f.LinkModes}, {FileLinkState, &f.LinkState}, {FileFEC, &f.FEC},
		{FileStats, &f.Stats}, {FileChannels, &f.Channels}, {FileRings, &f.Rings}, {FileNotRead, &f.NotRead},
	} {
		rel := dir + "/" + e.name
		b, err := fs.ReadFile(rel)
		if hostfs.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", fs.Display(rel), err)
		}
		if err := json.Unmarshal(b, e.into); err != nil {
			return nil, fmt.Errorf("reading %s: %w (see docs/schema/ethtool-%s.schema.json)", fs.Display(rel), err, strings.TrimSuffix(e.name, ".json"))
		}
	}
	if f.NotRead == nil {
		f.NotRead = map[string]string{}
	}
	// A snapshot of another version, or a tree written by hand, may name
	// FEC modes its own way or list them among the link modes.
	if f.LinkModes != nil {
		f.LinkModes.Normalize()
	}
	if f.FEC != nil {
		f.FEC.Normalize()
	}
	if err := f.loadModule(fs, dir+"/"+DirModule); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *Facts) loadModule(fs *hostfs.FS, dir string) error {
	names, err := fs.ReadDir(dir)
	if hostfs.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		rel := path.Join(dir, n)
		b, err := fs.ReadFile(rel)
		if err != nil {
			return fmt.Errorf("reading %s: %w", fs.Display(rel), err)
		}
		if n == FileModuleErr {
			f.ModuleError = strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
			if f.ModuleError == "" {
				return fmt.Errorf("reading %s: empty (it must hold the errno name of the failed read)", fs.Display(rel))
			}
			continue
		}
		stem, ok := strings.CutSuffix(n, ".bin")
		if !ok {
			return fmt.Errorf("reading %s: not a module page (want <i2c>-<page>-<bank>-<offset>.bin or error)", fs.Display(rel))
		}
		p, err := sff.ParsePageName(stem)
		if err != nil {
			return fmt.Errorf("reading %s: %w", fs.Display(rel), err)
		}
		if len(b) > sff.PageSize {
			return fmt.Errorf("reading %s: %d bytes, more than one %d-byte read", fs.Display(rel), len(b), sff.PageSize)
		}
		if f.Module == nil {
			f.Module = sff.Pages{}
		}
		f.Module[p] = b
	}
	return nil
}
