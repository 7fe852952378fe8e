package runner

import (
	"context"

	"github.com/fieldbench/fieldbench/recorder"
)

// PacedBatch is Batch in open loop: the workers do perWorker operations
// each, as in Batch, but the batch's operations are due at rate per second
// over all workers (the k-th at start + k/rate), and each one's latency is
// recorded from its intended start, never from when a worker got to it. A
// free worker claims the next start and waits for it, and a late one
// starts at once, so a store slower than the rate shows as latency that
// grows from the intended start instead of a quietly lower rate (at most
// len(workers) operations are in flight). Each worker does exactly its own
// perWorker operations in order, so a run stays replayable from its seeds.
// It is Shares with equal counts; rate must be positive.
func PacedBatch(ctx context.Context, workers []Worker, handles []*recorder.Handle, perWorker int64, rate float64) (interrupted bool) {
	counts := make([]int64, len(workers))
	for i := range counts {
		counts[i] = perWorker
	}
	_, interrupted = Shares(ctx, workers, handles, counts, rate)
	return interrupted
}
