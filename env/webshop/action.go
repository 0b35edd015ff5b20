package webshop

import (
	"regexp"

	"ragen/internal/pystr"
)

// actionRe is upstream's re.match(r'(.+)\[(.+)\]', action): anchored at
// the start only, "." not matching a newline, both groups greedy.
var actionRe = regexp.MustCompile(`^(.+)\[(.+)\]`)

// ParseAction is WebShop's parse_action (shared spec service-envs.md §4):
// name and argument of "name[arg]", the argument lowercased (Python's
// str.lower) but never trimmed. Without a match (ok=false) the name is the whole action.
//
//	search[ ]            → "search", " "
//	search[]             → no match
//	click[a][b]          → "click[a]", "b"
//	search[[x]]          → "search[", "x]"
//	search[Shoes] extra  → "search", "shoes"
func ParseAction(action string) (name, arg string, ok bool) {
	m := actionRe.FindStringSubmatch(action)
	if m == nil {
		return action, "", false
	}
	return m[1], pystr.Lower(m[2]), true
}

// ActionIsValid is upstream's action_is_valid, judged on the page before
// the step: search with a non-empty argument on a page with a search bar,
// or click on one of the page's clickables other than "search".
func ActionIsValid(action string, hasSearchBar bool, clickables []string) bool {
	name, arg, ok := ParseAction(action)
	if !ok {
		return false
	}
	switch name {
	case "search":
		return hasSearchBar && arg != ""
	case "click":
		if arg == "search" {
			return false
		}
		for _, c := range clickables {
			if c == arg {
				return true
			}
		}
	}
	return false
}
