package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// C2C is one stored core-to-core matrix: the linerate.c2c/v1 document
// with the host and time copied out for lookups.
type C2C struct {
	ID         int64
	MeasuredAt time.Time
	Host       string
	Result     json.RawMessage
}

// AddC2C stores a matrix and sets c.ID.
func (s *Store) AddC2C(ctx context.Context, c *C2C) error {
	if c.Host == "" {
		return errors.New("storing a core-to-core matrix: no host name")
	}
	if !json.Valid(c.Result) {
		return errors.New("storing a core-to-core matrix: the document is not JSON")
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO c2c_results (measured_at, host, result) VALUES (?, ?, ?)`,
		timeText(c.MeasuredAt), c.Host, string(c.Result))
	if err != nil {
		return fmt.Errorf("storing a core-to-core matrix in %s: %w", s.path, err)
	}
	c.ID, err = res.LastInsertId()
	return err
}

// LatestC2C returns the newest matrix stored for host, or ErrNotFound.
func (s *Store) LatestC2C(ctx context.Context, host string) (*C2C, error) {
	var c C2C
	var at, doc string
	err := s.db.QueryRowContext(ctx, `SELECT id, measured_at, host, result FROM c2c_results
		WHERE host = ? ORDER BY measured_at DESC, id DESC LIMIT 1`, host).Scan(&c.ID, &at, &c.Host, &doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("core-to-core matrix of %s: %w (run 'linerate c2c' on it)", host, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading core-to-core matrices from %s: %w", s.path, err)
	}
	c.MeasuredAt, c.Result = parseTime(at), json.RawMessage(doc)
	return &c, nil
}
