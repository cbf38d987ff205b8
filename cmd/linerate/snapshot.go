package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/dcb"
	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/netdev"
	"github.com/linerate/linerate/internal/snapshot"
)

func newSnapshotCmd(env *cliEnv) *cobra.Command {
	var out string
	var force bool
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Capture exactly what doctor reads, to diagnose this host elsewhere",
		Long: `snapshot records every file doctor reads from /sys and /proc, plus the live
rtnetlink facts (link kinds, qdisc rates) and the live ethtool facts of every
interface but lo (link modes, FEC, module EEPROM pages, NIC counters, rings,
channels) under linerate/ethtool/<iface>/ and the DCB configuration of every
PCI NIC (PFC, ETS, APP table, trust, DCBX) under linerate/dcb/<iface>/, into a
.tar.gz. 'linerate doctor --root FILE.tar.gz' then gives the same answer on any
machine. Process names other than irqbalance are not captured.`,
		Example: "  linerate snapshot -o crow.tar.gz\n  linerate doctor --root crow.tar.gz",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				h, _ := os.Hostname()
				out = fmt.Sprintf("linerate-%s-%s.tar.gz", h, time.Now().Format("20060102-150405"))
			}
			if _, err := os.Lstat(out); err == nil && !force {
				return fmt.Errorf("%s exists: pick another -o, or --force to replace it", out)
			}
			if dir := filepath.Dir(out); dir != "" {
				if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
					return fmt.Errorf("-o %s: the directory %s does not exist (create it, or pick another -o)", out, dir)
				}
			}
			return runSnapshot(env, out, os.Args)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "archive to write (default linerate-HOST-TIME.tar.gz); an existing file is refused")
	cmd.Flags().BoolVar(&force, "force", false, "replace the -o file if it exists")
	return cmd
}

// snapshotDoctorPath holds, inside a snapshot, the doctor JSON of the host
// at capture time (default options).
const snapshotDoctorPath = "linerate/doctor.json"

func runSnapshot(env *cliEnv, out string, argv []string) error {
	fs := hostfs.Live()
	defer fs.Close()
	rec := fs.Record()
	// Every interface's ethtool facts but loopback's: a replay may be
	// asked about any. What doctor said at capture time travels with the
	// capture, so a replay can be compared with it.
	x, err := doctor.Live(fs, doctor.LiveOptions{
		EthtoolVirtual: func(iface string) bool { return iface != "lo" },
		Read: func(iface string, f *ethtool.Facts) {
			files, err := f.Files()
			if err != nil {
				fmt.Fprintf(env.stderr, "linerate: warning: %s: %v (its ethtool facts are not in the snapshot)\n", iface, err)
				return
			}
			for p, b := range files {
				rec.Add(ethtool.Dir(iface)+"/"+p, b)
			}
		},
		ReadDCB: func(iface string, r *dcb.Reading) {
			files, err := r.Files()
			if err != nil {
				fmt.Fprintf(env.stderr, "linerate: warning: %s: %v (its DCB facts are not in the snapshot)\n", iface, err)
				return
			}
			for p, b := range files {
				rec.Add(dcb.Dir(iface)+"/"+p, b)
			}
		},
		Unread: func(source string, err error) {
			switch source {
			case doctor.SourceNetlink:
				fmt.Fprintf(env.stderr, "linerate: warning: %v (the snapshot will lack qdisc rates)\n", err)
			case doctor.SourceDCB:
				fmt.Fprintf(env.stderr, "linerate: warning: %v (the snapshot will lack DCB facts)\n", err)
			default:
				warnUnread(env, source, err)
			}
		},
	})
	if err != nil {
		return err
	}
	inv, rep := x.Inventory, x.Report
	if x.Netdev != nil {
		b, err := x.Netdev.Marshal()
		if err != nil {
			return err
		}
		rec.Add(netdev.Path, b)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	rec.Add(snapshotDoctorPath, append(b, '\n'))
	entries := rec.Entries()
	meta := snapshot.Meta{Created: time.Now().UTC().Truncate(time.Second), Hostname: inv.Host.Hostname,
		Version: version, Command: argv, Kernel: inv.Host.Kernel}
	if err := snapshot.WriteFile(out, entries, meta); err != nil {
		return err
	}
	size := int64(0)
	if fi, err := os.Stat(out); err == nil {
		size = fi.Size()
	}
	// Say what the entries are: tar also lists the parent directories
	// and the metadata the archive adds, so a bare "123 entries" never
	// matched what 'tar tzf' shows.
	var files, links int
	for _, e := range entries {
		switch {
		case e.Link != "":
			links++
		case !e.Dir:
			files++
		}
	}
	fmt.Fprintf(env.stdout, "wrote %s (%d files and %d symlinks read from this host, %d KiB); diagnose it anywhere with: linerate doctor --root %s\n",
		out, files, links, (size+1023)/1024, out)
	return nil
}
