module example.com/ragen-examples/handenv

go 1.26.0

require ragen v0.0.0

require gopkg.in/yaml.v3 v3.0.1 // indirect

replace ragen => ../..
