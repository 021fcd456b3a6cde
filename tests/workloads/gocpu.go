// A Go program that profiles itself with runtime/pprof, as Go services do: its CPU profile is
// what bpfprof report must read from another producer.  Usage: gocpu PROFILE [SECONDS]
// (default 1.5).  hotLoop takes about three times the CPU of warmLoop.
package main

import (
	"os"
	"runtime/pprof"
	"strconv"
	"time"
)

var sink uint64

//go:noinline
func spin(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
}

//go:noinline
func hotLoop() { spin(3000000) }

//go:noinline
func warmLoop() { spin(1000000) }

func main() {
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	secs := 1.5
	if len(os.Args) > 2 {
		secs, _ = strconv.ParseFloat(os.Args[2], 64)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for time.Now().Before(end) {
		hotLoop()
		warmLoop()
	}
	pprof.StopCPUProfile()
	f.Close()
}
