// Package envtest holds the shared test helpers of the env packages: Replay
// plays reference episodes recorded from upstream's Python environments
// (testdata/*_reference.json, read by Load) against ragen's envs, byte for
// byte; CheckPromptDefaults checks an env type's prompt defaults against the
// tag table; BenchReset is a reset benchmark over a Built env.
package envtest
