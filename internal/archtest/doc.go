// Package archtest holds the test of the project's import rules: which
// package may depend on which (docs/architecture.md, "Packages"). It has
// no code of its own.
package archtest
