// Package rule is how a package states a rule of its config keys so that
// package config can report it: a Problem names the dotted key and says what
// is wrong and what would fit. ragen, filter, env and starpo/algo return
// Problems from their Validate methods; config (which adds the checks that
// need the whole key tree: types, presence, interpolation, checks spanning
// packages) collects them under their keys, so each rule is written once,
// in the package that owns the key. The package imports nothing of ragen.
package rule
