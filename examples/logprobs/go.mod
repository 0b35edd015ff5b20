module example.com/ragen-examples/logprobs

go 1.26.0

require ragen v0.0.0

require (
	github.com/ardanlabs/jinja v1.8.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace ragen => ../..
