// Command gentrees writes the committed test host trees:
//
//	go run ./internal/hosttree/cmd/gentrees -o testdata/hosts
//
// or, with -large DIR, the large host scripts/bench-doctor.sh times.
//
// Each tree is rewritten from scratch (its directory is removed first), so
// running it twice gives identical files.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/linerate/linerate/internal/hosttree"
)

func main() {
	out := flag.String("o", "testdata/hosts", "directory to write the host trees into")
	large := flag.String("large", "", "write only the large benchmark host (512 CPUs, 8 NICs, 4,096 IRQs) into this new directory")
	flag.Parse()
	if *large != "" {
		if err := hosttree.Large().Write(*large); err != nil {
			fmt.Fprintln(os.Stderr, "gentrees:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gentrees:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	return hosttree.WriteTrees(out)
}
