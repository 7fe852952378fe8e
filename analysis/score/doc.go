// Package score computes the elasticity and scalability scores of Dory,
// Mejías, Van Roy and Tran (2011, seed 002) from request-set times, and
// recomputes them from a result file alone, so a score in a report can
// always be traced back to the points it came from.
//
// The pieces are small and exported so each can be tested against hand
// computations: a natural cubic Spline through the points, a recursive
// adaptive Simpson quadrature, the delta-time stability test, the
// elasticity score with every intermediate value, the scalability score,
// and FromRun, which puts them together over a result.Run. docs/elasticity.md
// gives every formula and every interpretation made where the study is vague.
//
// Units: times on the x axis are seconds since the run started, request-set
// times (Y, SD, Av1, Av2) and the time of one request (Rt1, Rt2) are
// seconds, areas A and B are seconds squared, the scores are dimensionless.
// NaN marks a figure that could not be computed (Notes say why); note that
// encoding/json rejects NaN.
package score
