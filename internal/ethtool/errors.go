package ethtool

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Error is a failed request: which message, on which interface, the
// errno and the kernel's extended-ack message, if any.
type Error struct {
	Op    string // "FEC_GET", "ETHTOOL_GSTATS ioctl", …
	Iface string
	Errno syscall.Errno // 0 when the failure was not an errno
	Msg   string        // the kernel's message, or what went wrong
	Err   error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s %s: ", e.Op, e.Iface)
	if e.Errno != 0 {
		s += errnoName(e.Errno)
		if e.Msg != "" {
			s += ": " + e.Msg
		} else {
			s += " (" + e.Errno.Error() + ")"
		}
		return s
	}
	if e.Msg != "" {
		return s + e.Msg
	}
	return s + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrNoFamily reports a kernel without the ethtool netlink family (before
// Linux 5.6), or one that lacks a message: the caller falls back to the
// ioctl where one exists.
var ErrNoFamily = errors.New("the kernel has no ethtool netlink family or message")

// ErrNoIoctl reports a fact that only netlink gives, on a kernel without
// the message.
var ErrNoIoctl = errors.New("no ioctl gives this on a kernel without the netlink message")

// wrap turns a netlink or ioctl error into an *Error.
func wrap(op, iface string, err error) error {
	if err == nil {
		return nil
	}
	e := &Error{Op: op, Iface: iface, Err: err}
	var oe *netlink.OpError
	if errors.As(err, &oe) {
		e.Msg = oe.Message
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		e.Errno = en
	}
	return e
}

// Errno returns the errno behind err, or 0.
func Errno(err error) syscall.Errno {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Errno
	}
	return 0
}

// IsNotSupported reports whether the driver (or kernel) does not support
// the request.
func IsNotSupported(err error) bool {
	en := Errno(err)
	return en == unix.EOPNOTSUPP || errors.Is(err, ErrNoIoctl)
}

// IsPermission reports whether the request needs privileges the caller
// lacks (CAP_NET_ADMIN: root).
func IsPermission(err error) bool {
	en := Errno(err)
	return en == unix.EPERM || en == unix.EACCES || errors.Is(err, os.ErrPermission)
}

// Reason says in a few words why a fact was not read, for doctor's "not
// read" list: "not supported by the driver (EOPNOTSUPP)", "needs root",
// "EIO: Failed to read module EEPROM".
func Reason(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case IsPermission(err):
		return "not read (needs root)"
	case errors.Is(err, ErrNoIoctl):
		return "not supported by this kernel (no netlink message, and no ioctl gives it)"
	case Errno(err) == unix.EOPNOTSUPP:
		return "not supported by the driver (EOPNOTSUPP)"
	case Errno(err) == unix.ENODEV:
		return "no such device (ENODEV)"
	case errors.As(err, &e) && e.Errno != 0:
		if e.Msg != "" {
			return errnoName(e.Errno) + ": " + e.Msg
		}
		return errnoName(e.Errno) + " (" + e.Errno.Error() + ")"
	}
	return err.Error()
}

// ErrorLine is the one line a module-eeprom/error file holds: the errno
// name, then the kernel's message if any ("EIO", "EIO: Failed to read").
func ErrorLine(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Errno != 0 {
		if e.Msg != "" {
			return errnoName(e.Errno) + ": " + e.Msg
		}
		return errnoName(e.Errno)
	}
	if en := Errno(err); en != 0 {
		return errnoName(en)
	}
	return err.Error()
}

// errnoName names an errno as the kernel headers do, EOPNOTSUPP rather
// than its alias ENOTSUP (both are 95 on Linux; ethtool users know the first).
func errnoName(e syscall.Errno) string {
	if e == unix.EOPNOTSUPP {
		return "EOPNOTSUPP"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}
