// Package bridgetest starts scripts/envbridge.py for tests, over the fake
// simulators of scripts/testdata/fakesim, on a free loopback port.
package bridgetest
