// Four goroutines taking one sync.Mutex 200,000 times each: Go's mutex
// parks goroutines in its own scheduler, so the futex waits a recording
// sees are the Go runtime's threads, not these lock waits
// (crates/contend-cli/tests/e2e/go_programs.rs).
package main

import (
	"fmt"
	"sync"
)

var (
	mu    sync.Mutex
	total int
)

//go:noinline
func work(rounds int) {
	for i := 0; i < rounds; i++ {
		mu.Lock()
		for k := 0; k < 100; k++ {
			total += k
		}
		mu.Unlock()
	}
}

func main() {
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(200000)
		}()
	}
	wg.Wait()
	fmt.Printf("total=%d\n", total)
}
