package main

import "time"

var start = time.Now()

func nowSeconds() float64 { return time.Since(start).Seconds() }
