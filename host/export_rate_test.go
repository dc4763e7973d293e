package host

import "time"

// SetRateClock makes the clock of h's local rate buckets now (tests:
// refill without sleeping). Call it before the first call.
func SetRateClock(h *Host, now func() time.Time) { h.rates.now = now }

// SetRateStoreBound replaces RateStoreTimeout for h (tests on a busy
// machine). Call it before the first call.
func SetRateStoreBound(h *Host, d time.Duration) { h.rates.bound = d }
