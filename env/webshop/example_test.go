package webshop_test

import (
	"fmt"

	"ragen/env/webshop"
)

// ParseAction and ActionIsValid check a model's action as upstream's
// WebShop env does, without a simulator: a search needs the page's search
// bar, a click must name one of the page's clickables.
func Example() {
	for _, a := range []string{"search[red running shoes]", "click[Buy Now]", "click[Sell]", "jump[x]"} {
		name, arg, ok := webshop.ParseAction(a)
		fmt.Printf("%-26q parsed=%v name=%q arg=%q valid=%v\n", a, ok, name, arg,
			webshop.ActionIsValid(a, true, []string{"buy now", "back to search"}))
	}
	// Output:
	// "search[red running shoes]" parsed=true name="search" arg="red running shoes" valid=true
	// "click[Buy Now]"           parsed=true name="click" arg="buy now" valid=true
	// "click[Sell]"              parsed=true name="click" arg="sell" valid=false
	// "jump[x]"                  parsed=true name="jump" arg="x" valid=false
}
