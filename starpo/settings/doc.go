// Package settings holds the trainer's settings: the part of upstream's
// config tree package starpo reads (Config, with its defaults, its checks
// and the learning-rate schedule). It is pure Go, so package config checks
// a key tree with the same Validate the trainer runs; package starpo
// re-exports every name.
package settings
