// Command linerate finds out why a fast link runs below line rate: it
// inventories and diagnoses the host (doctor), captures it (snapshot),
// and builds a virtual two-host lab (lab). See README.md.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
