package pathmtu

import "context"

// ethernetMTU is the size most paths that fail at a jumbo MTU carry, so the
// search tries it before anything else it has no hint for.
const ethernetMTU = 1500

// outcome is what the tries of one size found.
type outcome struct {
	ok   bool
	fail Failure // when !ok
}

// tester tries one size: it sends echo requests of that IP packet size
// until one is answered, a definite failure is reported, or its tries run
// out. An error means the probe cannot go on (a cancelled context, a
// broken socket), not that the size failed.
type tester func(ctx context.Context, size int) (outcome, error)

// search finds whether mtu passes and, if not, the largest size from floor
// up that does, recording every failure in res. Failures are what cost time
// (each waits out its tries), so the order of sizes is chosen to need few
// of them:
//
//  1. mtu itself;
//  2. the MTU the kernel or a router reported, if any (it usually passes,
//     and the sizes above it then fail at once, locally, from the cached
//     path MTU), else 1500 (the usual answer behind a jumbo mismatch),
//     else floor (if floor fails too, nothing passes: stop);
//  3. from a passing hint or 1500, a galloping search upward (+1, +2,
//     +4, …): when the hint was exact, one failure at hint+1 settles it;
//  4. bisection between the largest size that passed and the smallest
//     that failed, taking any new hint first.
//
// Every size probed lies strictly between the largest passing and the
// smallest failing size known, so the search ends.
func search(ctx context.Context, mtu, floor int, try tester, res *Result) error {
	lo, hi, hint := 0, mtu, 0
	tried1500, triedFloor := false, false
	gallop, step := false, 1

	// test tries size s and narrows lo or hi; it reports whether s passed.
	test := func(s int) (bool, error) {
		o, err := try(ctx, s)
		if err != nil {
			return false, err
		}
		if o.ok {
			lo = s
			return true, nil
		}
		res.Failures = append(res.Failures, o.fail)
		hi = s
		if h := o.fail.MTU; h >= floor && h > lo && h < s {
			hint = h
		}
		return false, nil
	}

	ok, err := test(mtu)
	if err != nil || ok {
		res.OK, res.Largest = ok, lo
		return err
	}

	// Find some size that passes.
	for lo == 0 {
		var s int
		switch {
		case hint > 0 && hint < hi:
			s, hint = hint, 0
		case !tried1500 && ethernetMTU >= floor && ethernetMTU < hi:
			s, tried1500 = ethernetMTU, true
		case !triedFloor && floor < hi:
			s, triedFloor = floor, true
		default:
			return nil // nothing passes, not even the minimum MTU
		}
		ok, err := test(s)
		if err != nil {
			return err
		}
		gallop = ok && s != floor
	}

	// Narrow down between lo (passes) and hi (fails).
	for hi-lo > 1 {
		var s int
		fromHint := false
		switch {
		case hint > lo && hint < hi:
			s, hint, fromHint = hint, 0, true
		case gallop && lo+step < hi:
			s = lo + step
		default:
			s, gallop = lo+(hi-lo)/2, false
		}
		ok, err := test(s)
		if err != nil {
			res.Largest = lo
			return err
		}
		switch {
		case ok && fromHint:
			gallop, step = true, 1
		case ok && gallop:
			step *= 2
		case !ok:
			gallop = false
		}
	}
	res.Largest = lo
	return nil
}
