// Package all registers every environment of ragen with package env. Import
// it for its side effect:
//
//	import _ "ragen/env/all"
//
// Each env family has its own file here with blank imports, so helpers
// adding envs touch only their own file.
package all
