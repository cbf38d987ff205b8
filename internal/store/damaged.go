package store

import (
	"errors"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DamagedError is a results database SQLite cannot read: random bytes, a
// truncated file, a page the disk corrupted. It says in one line which
// file it is and what to do: move it aside (the next command starts a new
// one) and, to rescue its runs, let sqlite3's .recover read what is left.
type DamagedError struct {
	Path string
	Err  error // SQLite's own error
}

func (e *DamagedError) Error() string {
	return "results database " + e.Path + " is damaged (" + sqliteMessage(e.Err) + "): move it aside (mv " + e.Path + " " + e.Path +
		".damaged) and run again; to rescue its runs: sqlite3 " + e.Path + ".damaged .recover | sqlite3 " + e.Path + ".recovered"
}

func (e *DamagedError) Unwrap() error { return e.Err }

// damaged returns a DamagedError for an error that says the file is not a
// database or is malformed, and err itself otherwise.
func damaged(path string, err error) error {
	var se *sqlite.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff { // the primary code; extended codes add bits above
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return &DamagedError{Path: path, Err: se}
	}
	return err
}

// sqliteMessage is SQLite's text without the code it appends: "file is
// not a database (26)" becomes "file is not a database".
func sqliteMessage(err error) string {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err.Error()
	}
	msg := se.Error()
	if i := strings.LastIndex(msg, " ("); i > 0 && strings.HasSuffix(msg, ")") {
		msg = msg[:i]
	}
	return msg
}
