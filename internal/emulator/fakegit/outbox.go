package fakegit

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// What both emulators' webhooks share: a queue sent as the forges send
// it, concurrently and in no promised order, each delivery tried again
// with a doubling wait until it is answered 2xx or out of attempts. What
// is delivered, signed and logged stays each emulator's.

// DeliveryConcurrency is how many deliveries an emulator has in flight at
// once. GitHub and GitLab send a repository's webhooks concurrently; a
// receiver that needs one delivery to finish before the next starts, or
// relies on their order, fails there, so it fails here.
const DeliveryConcurrency = 16

// DeliveryState is a delivery's fate so far, as the emulators' logs show
// it.
type DeliveryState struct {
	Attempts  int
	Status    int    // the last answer's status; 0 when none
	Err       string // the last failure, when the request itself failed
	Delivered bool   // answered 2xx
	Done      bool   // delivered, or out of attempts
}

// Record counts one try's outcome; the delivery is done once answered
// 2xx, after attempts tries, or when the emulator stops. It reports Done.
func (s *DeliveryState) Record(status int, err error, attempts int, stopping bool) bool {
	s.Attempts++
	s.Status, s.Err = status, ""
	if err != nil {
		s.Err = err.Error()
	}
	s.Delivered = err == nil && status/100 == 2
	s.Done = s.Delivered || s.Attempts >= attempts || stopping
	return s.Done
}

// RunDeliveries sends an emulator's queued deliveries until ctx ends:
// take hands over the next one's send (nil when none is queued) and the
// channel that says one was; each send runs in its own goroutine, at most
// DeliveryConcurrency at once, and is waited for before RunDeliveries
// returns.
func RunDeliveries(ctx context.Context, take func() (send func(context.Context), kick <-chan struct{})) {
	slots := make(chan struct{}, DeliveryConcurrency)
	var inFlight sync.WaitGroup
	defer inFlight.Wait()
	for {
		send, kick := take()
		if send == nil {
			select {
			case <-ctx.Done():
				return
			case <-kick:
				continue
			}
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		inFlight.Go(func() {
			defer func() { <-slots }()
			send(ctx)
		})
	}
}

// TryDelivery posts one delivery until done, told each try's outcome,
// says it is over; the wait between tries starts at delay and doubles,
// and ends early when ctx does.
func TryDelivery(ctx context.Context, delay time.Duration, post func(context.Context) (int, error), done func(status int, err error) bool) {
	for {
		status, err := post(ctx)
		if done(status, err) {
			return
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		delay *= 2
	}
}

// WaitDelivered waits until pending says no delivery is left undone; while
// one is, pending also hands over the channel closed when the next
// delivery ends.
func WaitDelivered(ctx context.Context, pending func() (bool, <-chan struct{})) error {
	for {
		left, done := pending()
		if !left {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for webhook deliveries: %w", ctx.Err())
		case <-done:
		}
	}
}
