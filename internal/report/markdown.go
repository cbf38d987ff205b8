package report

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// WriteMarkdown writes the report as Markdown to path, with the same
// tables, and each chart as an SVG file next to it (path's name without
// its extension, a dash and the chart's ID: report-waterfall.svg) that the
// Markdown links to.
func WriteMarkdown(path string, m *Model) error {
	if m == nil || m.r == nil {
		return errors.New("report: WriteMarkdown needs a model from Build")
	}
	dir := filepath.Dir(path)
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	var md bytes.Buffer
	svgName := func(c *chart) string { return stem + "-" + c.ID + ".svg" }
	writeMarkdown(&md, m, svgName)
	for _, s := range m.sections {
		for _, bl := range s.Blocks {
			if bl.Chart == nil {
				continue
			}
			if err := writeFile(filepath.Join(dir, svgName(bl.Chart)), func(w io.Writer) error {
				return m.r.writeSVG(w, bl.Chart)
			}); err != nil {
				return err
			}
		}
	}
	return writeFile(path, func(w io.Writer) error {
		_, err := w.Write(md.Bytes())
		return err
	})
}

// writeFile creates path and fills it with fill, reporting any error with
// the path.
func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	bw := bufio.NewWriter(f)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	return nil
}

// writeMarkdown renders the model; svgName names each chart's file.
func writeMarkdown(w *bytes.Buffer, m *Model, svgName func(*chart) string) {
	fmt.Fprintf(w, "# %s\n\n", mdText(m.Title))
	if m.Synthetic != "" {
		fmt.Fprintf(w, "> **Synthetic data.** %s\n\n", mdText(m.Synthetic))
	}
	fmt.Fprintf(w, "**%s**\n\n", mdText(m.Verdict))
	for _, s := range m.sections {
		if s.Omitted != "" {
			fmt.Fprintf(w, "_%s_\n\n", mdText(s.Omitted))
			continue
		}
		fmt.Fprintf(w, "## %s\n\n", mdText(s.Title))
		for _, bl := range s.Blocks {
			mdBlock(w, bl, svgName)
		}
	}
	fmt.Fprintf(w, "---\nWritten by linerate report%s.\n", map[bool]string{true: "", false: " " + m.version}[m.version == ""])
}

func mdBlock(w *bytes.Buffer, bl block, svgName func(*chart) string) {
	switch {
	case bl.Heading != "":
		fmt.Fprintf(w, "### %s\n\n", mdText(bl.Heading))
	case bl.Text != "":
		fmt.Fprintf(w, "%s\n\n", mdText(bl.Text))
	case bl.Table != nil:
		mdTable(w, bl.Table)
	case bl.Chart != nil:
		fmt.Fprintf(w, "![%s](%s)\n\n", mdText(bl.Chart.Title), svgName(bl.Chart))
	case len(bl.Items) > 0:
		for _, it := range bl.Items {
			fmt.Fprint(w, "- ")
			if it.Badge != "" {
				fmt.Fprintf(w, "**%s** ", strings.ToUpper(it.Badge))
			}
			if it.Lead != "" {
				fmt.Fprintf(w, "`%s` ", it.Lead)
			}
			fmt.Fprintf(w, "%s\n", mdText(it.Text))
			if len(it.Code) > 0 {
				fmt.Fprintf(w, "\n  ```\n")
				for _, c := range it.Code {
					fmt.Fprintf(w, "  %s\n", c)
				}
				fmt.Fprintf(w, "  ```\n\n")
			}
		}
		w.WriteString("\n")
	case len(bl.Code) > 0:
		fmt.Fprintf(w, "```\n%s\n```\n\n", strings.Join(bl.Code, "\n"))
	}
}

// mdTable writes a GitHub-flavoured Markdown table with its caption.
func mdTable(w *bytes.Buffer, t *table) {
	fmt.Fprintf(w, "**%s**\n\n|", mdText(t.Caption))
	for _, h := range t.Head {
		fmt.Fprintf(w, " %s |", mdCell(h))
	}
	w.WriteString("\n|")
	for i := range t.Head {
		if i < len(t.Num) && t.Num[i] {
			w.WriteString("---:|")
		} else {
			w.WriteString("---|")
		}
	}
	w.WriteString("\n")
	for _, row := range t.Rows {
		w.WriteString("|")
		for _, c := range row {
			fmt.Fprintf(w, " %s |", mdCell(c))
		}
		w.WriteString("\n")
	}
	w.WriteString("\n")
}

// mdText escapes the characters Markdown would read as markup in prose.
// (A loop rather than a strings.Replacer: building one per call dominated
// the cost of a 1,000-run report.)
func mdText(s string) string {
	if !strings.ContainsAny(s, "\\*_`<[") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		switch r {
		case '\\', '*', '_', '`', '[':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '<':
			b.WriteString("&lt;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdCell escapes a table cell: prose escapes, pipes, and no line breaks.
func mdCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(mdText(s), "|", "\\|"), "\n", " ")
}
