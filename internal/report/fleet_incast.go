package report

import (
	"fmt"
	"strconv"
)

// incastSection is an incast's figures (fleet run --pattern incast:HOST):
// each sender's goodput against the fair share, the sum at the receiver,
// the fairness across senders and the receiver's drops. It takes the
// matrix's place: an incast's matrix is one column, and nobody is blamed.
func (fb *fleetBuilder) incastSection() (*section, error) {
	in := fb.res.Incast
	s := &section{ID: "fleet-incast", Title: "Incast to " + in.Receiver}
	s.addText("Every other host sent to %s at once, for %s s each with %d stream%s: the fan-in storage and all-reduce traffic make. In incast the shares are the point: no sender is blamed; a sender below %s%% of the fair share (the sum shared evenly among the senders whose test worked) is short.",
		in.Receiver, num(fb.res.DurationS, 1), fb.res.Streams, plural(fb.res.Streams), num(in.ShortBelowPct, 0))
	if in.SumGbps != nil {
		jain := "—"
		if in.JainIndex != nil {
			jain = num(*in.JainIndex, 3)
		}
		s.addText("%s took %s Gbit/s from its senders together; the fair share is %s Gbit/s each; Jain's fairness index across the senders is %s (1 when every sender got the same, 1/n when one got everything).",
			in.Receiver, gbpsOrZero(*in.SumGbps), gbpsOrZero(*in.FairShareGbps), jain)
	}
	drops := "The receiver: " + in.DropsText()
	if in.ReceiverDrops.Readings > 1 {
		drops += fmt.Sprintf(" (the largest of %d readings: each sender's test read the counters over its own window, and the windows overlap)", in.ReceiverDrops.Readings)
	}
	if in.Retransmits != nil {
		drops += fmt.Sprintf("; the senders retransmitted %d segments", *in.Retransmits)
	}
	s.addText("%s.", drops)
	c, err := fb.incastChart()
	if err != nil {
		return nil, err
	}
	if c != nil {
		s.addChart(c)
	}
	t := &table{ID: "fleet-incast-senders", Caption: "Senders to " + in.Receiver,
		Head: []string{"Sender", "Goodput (Gbit/s)", "Of the fair share", "Retransmits", "Run", "Note"},
		Num:  []bool{false, true, true, true, true, false}}
	for _, snd := range in.Senders {
		g, share, re, run, note, class := "failed", "—", "—", "—", "", ""
		if snd.Gbps != nil {
			g = gbpsOrZero(*snd.Gbps)
		}
		if snd.FairPct != nil {
			share = num(*snd.FairPct, 0) + "%"
		}
		if snd.Retransmits != nil {
			re = strconv.FormatUint(*snd.Retransmits, 10)
		}
		if snd.RunID != 0 {
			run = strconv.FormatInt(snd.RunID, 10)
		}
		switch {
		case snd.Error != "":
			note, class = snd.Error, "crit"
		case snd.Short:
			// Highlighted, as a failure is: both got less than their share.
			note, class = fmt.Sprintf("short: %s%% less than its fair share", num(100-*snd.FairPct, 0)), "crit"
		}
		if snd.Contention != "" {
			note = joinNote(note, "contended: "+snd.Contention)
		}
		t.Rows = append(t.Rows, []string{snd.Name, g, share, re, run, orDash(note)})
		t.Classes = append(t.Classes, class)
	}
	if in.SumGbps != nil {
		re := "—"
		if in.Retransmits != nil {
			re = strconv.FormatUint(*in.Retransmits, 10)
		}
		t.Rows = append(t.Rows, []string{"sum at " + in.Receiver, gbpsOrZero(*in.SumGbps), "", re, "", "—"})
		t.Classes = append(t.Classes, "")
	}
	s.addTable(t)
	return s, nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// incastChart draws each sender's goodput as a horizontal bar on one
// Gbit/s axis, the short ones marked, with the fair share as a dashed
// line; nil when no sender measured.
func (fb *fleetBuilder) incastChart() (*chart, error) {
	in := fb.res.Incast
	if in.FairShareGbps == nil {
		return nil, nil
	}
	// top leaves room for the fair share's label above the bars.
	const left, right, top, rowH, barH = 120.0, 24.0, 30.0, 30.0, 20.0
	xMax := *in.FairShareGbps
	for _, snd := range in.Senders {
		if snd.Gbps != nil {
			xMax = max(xMax, *snd.Gbps)
		}
	}
	_, hi, ticks := niceTicks(0, xMax, 6)
	x := scale{d0: 0, d1: hi, p0: left, p1: chartW - right}
	bottom := top + rowH*float64(len(in.Senders))
	s := &scene{}
	for _, v := range ticks {
		s.line("grid", x.at(v), top, x.at(v), bottom)
		s.text("tick", x.at(v), bottom+18, "middle", tickText(v, ticks[1]-ticks[0]))
	}
	s.line("axis", left, bottom, chartW-right, bottom)
	s.text("axis-title", (left+chartW-right)/2, bottom+42, "middle", "Gbit/s at "+in.Receiver)
	for i, snd := range in.Senders {
		y := top + rowH*float64(i) + (rowH-barH)/2
		s.text("wf-name", left-10, y+15, "end", snd.Name)
		if snd.Gbps == nil {
			s.text("bar-label", left+6, y+15, "start", "failed")
			continue
		}
		class, label := "bar measured", gbpsOrZero(*snd.Gbps)
		if snd.FairPct != nil {
			label += " (" + num(*snd.FairPct, 0) + "% of the fair share)"
		}
		if snd.Short {
			class = "bar binding"
		}
		s.rect(class, x.p0, y, x.at(*snd.Gbps)-x.p0, barH, snd.Name+" → "+in.Receiver+": "+label)
		lx, anchor, lc := x.at(*snd.Gbps)+6, "start", "bar-label"
		if lx > x.p1-220 {
			lx, anchor, lc = x.at(*snd.Gbps)-6, "end", "bar-label inverse"
		}
		s.text(lc, lx, y+15, anchor, label)
	}
	fair := x.at(*in.FairShareGbps)
	s.line("ref", fair, top-6, fair, bottom)
	s.text("tick", fair, top-12, "middle", "fair share "+gbpsOrZero(*in.FairShareGbps))
	return fb.r.render("fleet-incast", "Incast to "+in.Receiver+": each sender's goodput",
		fmt.Sprintf("Horizontal bars in Gbit/s, one per sender to %s, the short ones marked; the dashed line is the fair share.", in.Receiver),
		chartW, int(bottom+56), s)
}
