package hosttree

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
)

// kernelMask prints cpus the way the kernel's "%*pb" does for a bitmap of
// nbits bits (nr_cpu_ids for CPU masks): 32-bit chunks, most significant
// first, separated by commas, each zero-padded to 8 hex digits except the
// first, which has just enough digits for the bits left over (lib/vsprintf.c
// bitmap_string). With 12 CPUs, CPU 11 is "800"; with 40, CPU 0 is
// "00,00000001".
func kernelMask(cpus []int, nbits int) string {
	if nbits <= 0 {
		nbits = 1
	}
	words := make([]uint32, (nbits+31)/32)
	for _, c := range cpus {
		if c >= 0 && c < nbits {
			words[c/32] |= 1 << (c % 32)
		}
	}
	var b strings.Builder
	first := nbits % 32
	if first == 0 {
		first = 32
	}
	for i := len(words) - 1; i >= 0; i-- {
		width := 8
		if i == len(words)-1 {
			width = (first + 3) / 4
		} else {
			b.WriteByte(',')
		}
		h := strconv.FormatUint(uint64(words[i]), 16)
		for range width - len(h) {
			b.WriteByte('0')
		}
		b.WriteString(h)
	}
	return b.String()
}

// list prints cpus in the kernel's list notation ("0-5,8").
func list(cpus []int) string { return cpulist.Format(cpus) }

// kernelVersion returns the major and minor numbers of an osrelease such
// as "6.8.0-51-generic"; an unparsable release counts as very new.
func kernelVersion(release string) (major, minor int) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 99, 0
	}
	maj, err1 := strconv.Atoi(parts[0])
	mn := parts[1]
	if i := strings.IndexFunc(mn, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		mn = mn[:i]
	}
	mnr, err2 := strconv.Atoi(mn)
	if err1 != nil || err2 != nil {
		return 99, 0
	}
	return maj, mnr
}

// atLeast reports whether the host's kernel is at least major.minor.
func (h *Host) atLeast(major, minor int) bool {
	maj, mn := kernelVersion(h.Kernel)
	return maj > major || (maj == major && mn >= minor)
}

// linkSpeed prints a PCIe link speed as current_link_speed does: "8.0 GT/s
// PCIe" since Linux 4.17 (pci_speed_string), "8 GT/s" before.
func (h *Host) linkSpeed(gts float64) string {
	if h.atLeast(4, 17) {
		switch gts {
		case 2.5:
			return "2.5 GT/s PCIe"
		case 5:
			return "5.0 GT/s PCIe"
		case 8:
			return "8.0 GT/s PCIe"
		case 16:
			return "16.0 GT/s PCIe"
		case 32:
			return "32.0 GT/s PCIe"
		case 64:
			return "64.0 GT/s PCIe"
		}
		return "Unknown"
	}
	switch gts {
	case 2.5:
		return "2.5 GT/s"
	case 5:
		return "5 GT/s"
	case 8:
		return "8 GT/s"
	case 16:
		return "16 GT/s"
	}
	return "Unknown speed"
}

// speedCode is the PCIe Current/Max Link Speed field for a speed in GT/s.
func speedCode(gts float64) (uint16, error) {
	switch gts {
	case 2.5:
		return 1, nil
	case 5:
		return 2, nil
	case 8:
		return 3, nil
	case 16:
		return 4, nil
	case 32:
		return 5, nil
	case 64:
		return 6, nil
	}
	return 0, fmt.Errorf("no PCIe link speed of %g GT/s", gts)
}

// sizeCode is the DevCap/DevCtl encoding of a payload or read request size
// (128 → 0 … 4096 → 5).
func sizeCode(bytes int) (uint16, error) {
	for code, size := uint16(0), 128; code <= 5; code, size = code+1, size*2 {
		if size == bytes {
			return code, nil
		}
	}
	return 0, fmt.Errorf("no PCIe payload size of %d bytes", bytes)
}

// bdf is a parsed PCI address.
type bdf struct {
	domain, bus, dev, fn int
}

func parseBDF(s string) (bdf, error) {
	var a bdf
	if len(s) != len("0000:00:00.0") {
		return a, fmt.Errorf("PCI address %q: want DDDD:BB:DD.F", s)
	}
	if _, err := fmt.Sscanf(s, "%04x:%02x:%02x.%1x", &a.domain, &a.bus, &a.dev, &a.fn); err != nil {
		return a, fmt.Errorf("PCI address %q: %w", s, err)
	}
	if a.dev > 31 || a.fn > 7 {
		return a, fmt.Errorf("PCI address %q: device or function out of range", s)
	}
	return a, nil
}

// hostBridge is the sysfs directory of the root bus a root port sits on:
// "pci0000:16" for 0000:16:02.0.
func (a bdf) hostBridge() string {
	return fmt.Sprintf("pci%04x:%02x", a.domain, a.bus)
}

// devID is the PCI requester ID (bus << 8 | devfn).
func (a bdf) devID() int { return a.bus<<8 | a.dev<<3 | a.fn }

// hexID prints a PCI ID as sysfs does: "0x15b3".
func hexID(v uint16) string { return fmt.Sprintf("0x%04x", v) }
