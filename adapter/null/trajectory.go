package null

import (
	"context"

	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// Trajectory implements trajectory.Backend.
func (db *DB) Trajectory(context.Context) (trajectory.Store, error) { return trajStore{db}, nil }

// trajStore counts records written and finds nothing.
type trajStore struct{ db *DB }

func (s trajStore) Write(_ context.Context, recs []trajectory.Record) error {
	s.db.traj.Add(int64(len(recs)))
	return nil
}

func (trajStore) Distance(context.Context, trajectory.Point, int64) ([]trajectory.Hit, error) {
	return nil, nil
}

func (trajStore) KNN(context.Context, trajectory.Point, int, int64) ([]trajectory.Hit, error) {
	return nil, nil
}

func (trajStore) Range(context.Context, trajectory.Triangle) ([]trajectory.Hit, error) {
	return nil, nil
}

func (trajStore) Region(context.Context, trajectory.Weekday, int) (trajectory.Busiest, bool, error) {
	return trajectory.Busiest{}, false, nil
}

// Counts reports the records written (cells are not kept: 0).
func (s trajStore) Counts(context.Context) (trajectory.Counts, error) {
	return trajectory.Counts{Records: s.db.traj.Load()}, nil
}

func (s trajStore) Reset(context.Context) error {
	s.db.traj.Store(0)
	return nil
}

func (trajStore) Close() error { return nil }
