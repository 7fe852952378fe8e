// Package trajectory is the spatio-temporal workload (Niyizamwiyitira &
// Lundberg 2017): mobile users' location updates in a synthetic city and
// distance, k-NN, range and region queries over cells.
package trajectory
