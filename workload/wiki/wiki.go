// Package wiki is the elasticity study's workload (Dory et al. 2011):
// articles of very different sizes read and appended to in request sets.
package wiki
