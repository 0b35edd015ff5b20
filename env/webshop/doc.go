// Package webshop is the WebShop environment (upstream env_type
// "webshop", tags WebShop and WebShopFull; shared spec envs.md §12),
// run against the upstream simulator through a bridge.
//
// The simulator (webshop-minimal, a Python package with a product
// database and a search engine) cannot run inside a Go process, so the
// env is an httpenv client of scripts/envbridge.py, a Python program that
// wraps the simulator and implements upstream's env behaviour (goal
// selection from the seed and mode, search[]/click[] actions, the
// 1.0-if-reward≥1 rule, the rendered instructions and available actions)
// behind the protocol of `ragen serve-envs` (package httpenv). The
// env_config keys are upstream's, plus bridge_url and bridge_timeout.
//
// What crosses the bridge follows shared spec service-envs.md §4: reset
// returns the simulator's own observation, a step returns the simulator's
// text observation, and the step info is the simulator's info with
// upstream's keys set on top (success, success_purchase, success_find and
// end_of_page as ints). [ParseAction] and [ActionIsValid] are upstream's
// action parser and validity rule, for checking actions from Go.
//
// Building an env creates it on the bridge, so a bridge that is not
// running fails at build time, before any model loads, with a message
// naming the URL and how to start the bridge.
package webshop
